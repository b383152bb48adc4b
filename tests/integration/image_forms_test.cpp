// images/edits and images/variations (Lemonade 9.4.1's multipart routes) go
// to sd-server's /v1/images/edits as a form with the extra arguments in the
// prompt; audio/speech is refused clearly (no recipe serves it here).
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

class ImageFormsTest : public RouterTest {
 protected:
  HttpReply post_form(const std::string& route, const std::vector<FormPart>& parts) {
    return raw_request(port(), "POST", "/api/v1/" + route,
                       {{"Content-Type", multipart_content_type()}}, multipart_body(parts));
  }
  nlohmann::json last_form() {
    return fake_state(loaded_field(health(port()), "user.i", "backend_url"))["last_request"];
  }
};

const std::string kPng = std::string("\x89PNG\r\n\x1a\n", 8) + "pixels";

TEST_F(ImageFormsTest, AnEditSendsPromptImagesAndMaskWithTheExtraArguments) {
  env_.add_image("i");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r = post_form(
      "images/edits",
      {form_field("model", "user.i"), form_field("prompt", "make it blue"), form_field("n", "2"),
       form_field("steps", "4"), form_file("image", kPng, "in.png", "image/png"),
       form_file("mask", kPng, "mask.png", "image/png")});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["data"].size(), 2u);
  auto sent = last_form();
  const std::string prompt = sent["prompt"];
  EXPECT_EQ(prompt.rfind("make it blue <sd_cpp_extra_args>", 0), 0u) << prompt;
  auto extra = nlohmann::json::parse(
      prompt.substr(prompt.find('>') + 1, prompt.rfind('<') - prompt.find('>') - 1));
  EXPECT_EQ(extra["steps"], 4) << "the form's value wins";
  EXPECT_EQ(extra["cfg_scale"], 7.0) << "the load option's default";
  EXPECT_EQ(sent["n"], "2");
  EXPECT_EQ(sent["size"], "512x512");
  EXPECT_EQ(sent["images"], 1);
  EXPECT_EQ(sent["mask"], true);
}

TEST_F(ImageFormsTest, AVariationHasNoPromptOfItsOwn) {
  env_.add_image("i");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r =
      post_form("images/variations", {form_field("model", "user.i"), form_field("size", "256x256"),
                                      form_file("image[]", kPng, "in.png", "image/png"),
                                      form_file("mask", kPng, "mask.png", "image/png")});
  ASSERT_EQ(r.status, 200) << r.body;
  auto sent = last_form();
  EXPECT_EQ(sent["prompt"].get<std::string>().rfind("variation <sd_cpp_extra_args>", 0), 0u);
  EXPECT_EQ(sent["size"], "256x256");
  EXPECT_EQ(sent["mask"], false) << "variations take no mask";
}

TEST_F(ImageFormsTest, BadFormsAreClear400s) {
  env_.add_image("i");
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto no_image =
      post_form("images/edits", {form_field("model", "user.i"), form_field("prompt", "x")});
  EXPECT_EQ(no_image.status, 400);
  EXPECT_EQ(no_image.json()["error"]["param"], "image");
  auto no_prompt = post_form("images/edits", {form_field("model", "user.i"),
                                              form_file("image", kPng, "a.png", "image/png")});
  EXPECT_EQ(no_prompt.json()["error"]["param"], "prompt");
  auto bad_n = post_form("images/variations", {form_field("model", "user.i"), form_field("n", "0"),
                                               form_file("image", kPng, "a.png", "image/png")});
  EXPECT_EQ(bad_n.json()["error"]["param"], "n");
  // What sd-server would skip, clamp or try without a word (image_form.h).
  struct Case {
    std::vector<FormPart> parts;
    const char* param;
  };
  const std::vector<Case> cases = {
      {{form_field("model", "user.i"), form_file("image", "not a picture", "a.png", "image/png")},
       "image"},
      {{form_field("model", "user.i"), form_file("image[]", "", "a.png", "image/png")}, "image[]"},
      {{form_field("model", "user.i"), form_file("image", kPng, "a.png", "image/png"),
        form_file("mask", std::string(64, '\0'), "m.png", "image/png")},
       "mask"},
      {{form_field("model", "user.i"), form_file("image", kPng, "a.png", "image/png"),
        form_field("strength", "0.5")},
       "strength"},
      {{form_field("model", "user.i"), form_file("image", kPng, "a.png", "image/png"),
        form_field("n", "9")},
       "n"},
      {{form_field("model", "user.i"), form_file("image", kPng, "a.png", "image/png"),
        form_field("size", "512x4096")},
       "size"},
      {{form_field("model", "user.i"), form_file("image", kPng, "a.png", "image/png"),
        form_field("response_format", "url")},
       "response_format"},
  };
  for (const auto& c : cases) {
    auto r = post_form("images/variations", c.parts);
    EXPECT_EQ(r.status, 400) << c.param << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["param"], c.param) << r.body;
  }
  for (const std::string& jpeg_gif_bmp :
       {std::string("\xFF\xD8\xFF\xE0"), std::string("GIF89a"), std::string("BM")}) {
    auto r = post_form("images/variations",
                       {form_field("model", "user.i"), form_file("image", jpeg_gif_bmp + "pixels",
                                                                 "a", "application/octet-stream")});
    EXPECT_EQ(r.status, 200) << r.body;
  }
  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.i"}}).status,
            200);
  auto llm = post_form("images/edits", {form_field("model", "user.a"), form_field("prompt", "x"),
                                        form_file("image", kPng, "a.png", "image/png")});
  EXPECT_EQ(llm.status, 400);
  EXPECT_EQ(llm.json()["error"]["code"], "unsupported_operation");
  EXPECT_EQ(http_post(port(), "/api/v1/images/edits", nlohmann::json{{"model", "user.i"}}).status,
            415)
      << "JSON is not a form";
  EXPECT_TRUE(loaded_names(health(port())).empty()) << "nothing loaded for bad input";
}

TEST_F(ImageFormsTest, SpeechIsRefusedNamingWhy) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r = http_post(port(), "/api/v1/audio/speech",
                     nlohmann::json{{"model", "user.a"}, {"input", "hello"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["code"], "unsupported_operation");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("text-to-speech"),
            std::string::npos);
  EXPECT_EQ(http_post(port(), "/api/v1/audio/speech",
                      nlohmann::json{{"model", "nope"}, {"input", "hello"}})
                .status,
            404);
  EXPECT_EQ(http_post(port(), "/api/v1/audio/speech", nlohmann::json{{"model", "user.a"}})
                .json()["error"]["param"],
            "input");
}

}  // namespace
}  // namespace lemon::testing
