// The image routes' checks (image_form.h): what sd-server would clamp, skip
// or try without a word is a 400 naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lemon/api/openai/image_form.h"

namespace lemon::api {
namespace {

using http::MultipartPart;

const std::string kPngBytes = std::string("\x89PNG\r\n\x1a\n", 8) + "rest";

MultipartPart image_form_field(const std::string& name, std::string_view value) {
  return {name, "", "", value};
}
MultipartPart image_form_file(const std::string& name, std::string_view bytes) {
  return {name, "a.png", "image/png", bytes};
}

std::string image_param_of(const Status& s) {
  return s.ok() ? std::string() : s.error().param();
}

TEST(ImageSize, TakesEachSideUpToTheLimit) {
  EXPECT_TRUE(check_image_size("512x512").ok());
  EXPECT_TRUE(check_image_size("1x2048").ok());
  EXPECT_FALSE(check_image_size("2049x512").ok());
  EXPECT_FALSE(check_image_size("512x99999").ok());
  for (const char* bad : {"", "x", "512", "512x", "x512", "0x512", "512x0", "-1x5", "5x5x5",
                          "0512x512", "512 x512", "1e3x512"}) {
    EXPECT_EQ(image_param_of(check_image_size(bad)), "size") << bad;
  }
}

TEST(ImageSignature, KnowsTheFormatsSdServerDecodes) {
  EXPECT_TRUE(is_decodable_image(kPngBytes));
  EXPECT_TRUE(is_decodable_image("\xFF\xD8\xFF\xE0 jpeg"));
  EXPECT_TRUE(is_decodable_image("GIF89a..."));
  EXPECT_TRUE(is_decodable_image("GIF87a..."));
  EXPECT_TRUE(is_decodable_image("BM...."));
  EXPECT_FALSE(is_decodable_image("RIFF\x10\0\0\0WEBPVP8 "));  // stb_image has no WebP
  EXPECT_FALSE(is_decodable_image(std::string_view("\x89PNG", 4)));
  EXPECT_FALSE(is_decodable_image(""));
}

TEST(ImageForm, AVariationNeedsAModelAndADecodableImage) {
  const auto route = ApiRoute::kImageVariations;
  EXPECT_TRUE(
      check_image_form(route, {image_form_field("model", "m"), image_form_file("image", kPngBytes)})
          .ok());
  EXPECT_TRUE(check_image_form(
                  route, {image_form_field("model", "m"), image_form_file("image[]", kPngBytes),
                          image_form_file("image[]", kPngBytes), image_form_field("n", "8"),
                          image_form_field("size", "256x192"), image_form_field("seed", "7")})
                  .ok());
  EXPECT_EQ(image_param_of(check_image_form(route, {image_form_file("image", kPngBytes)})),
            "model");
  EXPECT_EQ(image_param_of(check_image_form(route, {image_form_field("model", "m")})), "image");
  EXPECT_EQ(image_param_of(check_image_form(
                route, {image_form_field("model", "m"), image_form_file("image", "")})),
            "image");
  EXPECT_EQ(image_param_of(check_image_form(
                route, {image_form_field("model", "m"), image_form_file("image", "text")})),
            "image");
  EXPECT_EQ(image_param_of(check_image_form(
                route, {image_form_field("model", "m"), image_form_file("image", kPngBytes),
                        image_form_file("image[]", "junk")})),
            "image[]");
  EXPECT_EQ(image_param_of(check_image_form(
                route, {image_form_field("model", "m"), image_form_file("image", kPngBytes),
                        image_form_file("mask", "junk")})),
            "mask");
}

TEST(ImageForm, AnEditNeedsAPrompt) {
  const auto route = ApiRoute::kImageEdits;
  EXPECT_EQ(image_param_of(check_image_form(
                route, {image_form_field("model", "m"), image_form_file("image", kPngBytes)})),
            "prompt");
  EXPECT_TRUE(check_image_form(
                  route, {image_form_field("model", "m"), image_form_file("image", kPngBytes),
                          image_form_field("prompt", "blue"), image_form_field("quality", "high")})
                  .ok());
}

TEST(ImageForm, RangesAndUnknownFieldsAreNamed) {
  const auto route = ApiRoute::kImageVariations;
  auto with = [&](MultipartPart extra) {
    return image_param_of(check_image_form(
        route, {image_form_field("model", "m"), image_form_file("image", kPngBytes), extra}));
  };
  EXPECT_EQ(with(image_form_field("n", "0")), "n");
  EXPECT_EQ(with(image_form_field("n", "9")), "n");
  EXPECT_EQ(with(image_form_field("n", "two")), "n");
  EXPECT_EQ(with(image_form_field("size", "4096x4096")), "size");
  EXPECT_EQ(with(image_form_field("response_format", "url")), "response_format");
  EXPECT_EQ(with(image_form_field("strength", "0.5")), "strength");
  EXPECT_EQ(with(image_form_field("response_format", "b64_json")), "");
  EXPECT_EQ(with(image_form_field("prompt",
                                  "x <sd_cpp_extra_args>{\"width\":9000}"
                                  "</sd_cpp_extra_args>")),
            "prompt")
      << "sd-server would obey the first block, the client's";
  EXPECT_EQ(with(image_form_field("steps", "101")), "steps");
  EXPECT_EQ(with(image_form_field("steps", "100")), "");
  EXPECT_EQ(with(image_form_field("cfg_scale", "high")), "cfg_scale");
  EXPECT_EQ(with(image_form_field("seed", "1.5")), "seed");
  EXPECT_EQ(with(image_form_field("seed", "-1")), "");
}

}  // namespace
}  // namespace lemon::api
