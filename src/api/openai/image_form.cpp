#include "lemon/api/openai/image_form.h"

#include <charconv>

#include <nlohmann/json.hpp>
#include <string>

namespace lemon::api {
namespace {

// OpenAI's fields of images/edits and images/variations (the ones the
// router does not pass on are accepted and ignored, so SDK calls work),
// then the sd-server values SdServer::rewrite_form reads.
const char* const kImageFormFields[] = {"model", "image", "image[]", "mask", "prompt", "n", "size",
                                        "response_format", "user", "quality", "background",
                                        "output_format", "output_compression", "input_fidelity",
                                        "partial_images", "stream", "moderation", "style",
                                        // sd-server's, inside <sd_cpp_extra_args>
                                        "steps", "cfg_scale", "seed"};

bool is_image_form_field(std::string_view name) {
  for (const char* f : kImageFormFields) {
    if (name == f) {
      return true;
    }
  }
  return false;
}

Error image_field_error(const std::string& field, const std::string& what) {
  return Error(ErrorCode::kInvalidRequest, "'" + field + "' " + what, field);
}

bool parse_positive_int(std::string_view text, int* out) {
  if (text.empty() || text.size() > 5 || text[0] < '1' || text[0] > '9') {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

Status check_image_file(const http::MultipartPart& part) {
  if (part.data.empty()) {
    return image_field_error(part.name, "is an empty file");
  }
  if (!is_decodable_image(part.data)) {
    return image_field_error(part.name, "must be a PNG, JPEG, BMP or GIF image");
  }
  return ok_status();
}

}  // namespace

Status check_image_size(std::string_view size) {
  const auto x = size.find('x');
  int width = 0;
  int height = 0;
  if (x == std::string_view::npos || !parse_positive_int(size.substr(0, x), &width) ||
      !parse_positive_int(size.substr(x + 1), &height)) {
    return image_field_error("size", "must look like \"512x512\"");
  }
  if (width > kMaxImageSide || height > kMaxImageSide) {
    return image_field_error("size", "asks for " + std::string(size) + ": each side is at most " +
                                         std::to_string(kMaxImageSide) + " pixels");
  }
  return ok_status();
}

Status check_image_prompt(std::string_view prompt) {
  if (prompt.find("<sd_cpp_extra_args>") != std::string_view::npos ||
      prompt.find("</sd_cpp_extra_args>") != std::string_view::npos) {
    return image_field_error("prompt",
                             "may not hold <sd_cpp_extra_args>: send steps, cfg_scale, seed, "
                             "size and n as fields");
  }
  return ok_status();
}

bool is_decodable_image(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  return starts(std::string_view("\x89PNG\r\n\x1a\n", 8)) || starts("\xFF\xD8\xFF") ||
         starts("BM") || starts("GIF87a") || starts("GIF89a");
}

Status check_image_form(ApiRoute route, const std::vector<http::MultipartPart>& parts) {
  for (const auto& part : parts) {
    if (!is_image_form_field(part.name)) {
      return image_field_error(part.name, "is not a field " + std::string(api_route_name(route)) +
                                              " takes (docs/api.md lists them)");
    }
  }
  const http::MultipartPart* model = http::find_part(parts, "model");
  if (model == nullptr || model->data.empty()) {
    return Error(ErrorCode::kInvalidRequest, "'model' is required", "model");
  }
  bool has_image = false;
  for (const auto& part : parts) {
    if (part.name == "image" || part.name == "image[]" || part.name == "mask") {
      has_image = has_image || part.name != "mask";
      if (auto s = check_image_file(part); !s.ok()) {
        return s;
      }
    }
  }
  if (!has_image) {
    return Error(ErrorCode::kInvalidRequest, "'image' (a file) is required", "image");
  }
  const http::MultipartPart* prompt = http::find_part(parts, "prompt");
  if (route == ApiRoute::kImageEdits && (prompt == nullptr || prompt->data.empty())) {
    return Error(ErrorCode::kInvalidRequest, "'prompt' is required", "prompt");
  }
  if (prompt != nullptr) {
    if (auto s = check_image_prompt(prompt->data); !s.ok()) {
      return s;
    }
  }
  if (const http::MultipartPart* steps = http::find_part(parts, "steps")) {
    int value = 0;
    if (!parse_positive_int(steps->data, &value) || value > kMaxImageSteps) {
      return image_field_error("steps",
                               "must be an integer from 1 to " + std::to_string(kMaxImageSteps));
    }
  }
  for (const char* number : {"cfg_scale", "seed"}) {
    if (const http::MultipartPart* f = http::find_part(parts, number)) {
      auto value = nlohmann::json::parse(f->data, nullptr, false);
      const bool ok = std::string_view(number) == "seed"
                          ? value.is_number_integer() && value.get<long long>() >= -1
                          : value.is_number();
      if (!ok) {
        return image_field_error(number, std::string_view(number) == "seed"
                                             ? "must be an integer (-1: random)"
                                             : "must be a number");
      }
    }
  }
  if (const http::MultipartPart* n = http::find_part(parts, "n")) {
    int value = 0;
    if (!parse_positive_int(n->data, &value) || value < 1 || value > kMaxImagesPerRequest) {
      return image_field_error(
          "n", "must be an integer from 1 to " + std::to_string(kMaxImagesPerRequest));
    }
  }
  if (const http::MultipartPart* size = http::find_part(parts, "size")) {
    if (auto s = check_image_size(size->data); !s.ok()) {
      return s;
    }
  }
  if (const http::MultipartPart* f = http::find_part(parts, "response_format")) {
    if (f->data != "b64_json") {
      return image_field_error("response_format", "must be \"b64_json\" (URLs are not served)");
    }
  }
  return ok_status();
}

}  // namespace lemon::api
