#include "lemon/api/openai/request_checks.h"

#include <string>

#include "lemon/api/openai/image_form.h"

namespace lemon::api {
namespace {

Error invalid(const char* field, const std::string& what) {
  return Error(ErrorCode::kInvalidRequest, std::string("'") + field + "' " + what, field);
}

bool present(const nlohmann::json& body, const char* field) {
  auto it = body.find(field);
  return it != body.end() && !it->is_null();
}

Status optional_integer(const nlohmann::json& body, const char* field, long long min,
                        long long max) {
  if (!present(body, field)) {
    return ok_status();
  }
  const auto& v = body.at(field);
  if (!v.is_number_integer() || v.get<long long>() < min || v.get<long long>() > max) {
    return invalid(field,
                   "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return ok_status();
}

Status optional_number(const nlohmann::json& body, const char* field) {
  if (present(body, field) && !body.at(field).is_number()) {
    return invalid(field, "must be a number");
  }
  return ok_status();
}

bool is_token_array(const nlohmann::json& v) {
  if (!v.is_array() || v.empty()) {
    return false;
  }
  for (const auto& t : v) {
    if (!t.is_number_integer()) {
      return false;
    }
  }
  return true;
}

// A string, or a non-empty array of strings (or, as OpenAI allows, of token
// ids or token-id arrays).
bool is_text_input(const nlohmann::json& v) {
  if (v.is_string()) {
    return true;
  }
  if (!v.is_array() || v.empty()) {
    return false;
  }
  if (is_token_array(v)) {
    return true;
  }
  for (const auto& item : v) {
    if (!item.is_string() && !is_token_array(item)) {
      return false;
    }
  }
  return true;
}

Status check_chat(const nlohmann::json& body) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty()) {
    return invalid("messages", "must be a non-empty array of message objects");
  }
  for (const auto& m : *it) {
    if (!m.is_object()) {
      return invalid("messages", "must contain only objects");
    }
  }
  return ok_status();
}

Status check_completions(const nlohmann::json& body) {
  if (!present(body, "prompt") || !is_text_input(body.at("prompt"))) {
    return invalid("prompt", "must be a string or a non-empty array of strings");
  }
  return ok_status();
}

Status check_responses(const nlohmann::json& body) {
  if (!present(body, "input")) {
    return invalid("input", "is required");
  }
  const auto& input = body.at("input");
  if (!input.is_string() && !(input.is_array() && !input.empty())) {
    return invalid("input", "must be a string or a non-empty array of input items");
  }
  return ok_status();
}

Status check_embeddings(const nlohmann::json& body) {
  if (!present(body, "input") || !is_text_input(body.at("input"))) {
    return invalid("input", "must be a string or a non-empty array of strings");
  }
  if (present(body, "encoding_format")) {
    const auto& f = body.at("encoding_format");
    if (!f.is_string() || (f != "float" && f != "base64")) {
      return invalid("encoding_format", "must be \"float\" or \"base64\"");
    }
  }
  return ok_status();
}

Status check_reranking(const nlohmann::json& body) {
  if (!present(body, "query") || !body.at("query").is_string()) {
    return invalid("query", "must be a string");
  }
  auto it = body.find("documents");
  if (it == body.end() || !it->is_array() || it->empty()) {
    return invalid("documents", "must be a non-empty array of strings");
  }
  for (const auto& d : *it) {
    if (!d.is_string()) {
      return invalid("documents", "must contain only strings");
    }
  }
  return optional_integer(body, "top_n", 1, 1'000'000);
}

Status check_images(const nlohmann::json& body) {
  if (!present(body, "prompt") || !body.at("prompt").is_string() ||
      body.at("prompt").get_ref<const std::string&>().empty()) {
    return invalid("prompt", "must be a non-empty string");
  }
  if (auto s = check_image_prompt(body.at("prompt").get_ref<const std::string&>()); !s.ok()) {
    return s;
  }
  if (auto s = optional_integer(body, "n", 1, kMaxImagesPerRequest); !s.ok()) {
    return s;
  }
  if (present(body, "size")) {
    const auto& size = body.at("size");
    if (!size.is_string()) {
      return invalid("size", "must look like \"512x512\"");
    }
    if (auto s = check_image_size(size.get_ref<const std::string&>()); !s.ok()) {
      return s;
    }
  }
  if (present(body, "response_format") && body.at("response_format") != "b64_json") {
    return invalid("response_format", "must be \"b64_json\" (URLs are not served)");
  }
  if (auto s = optional_integer(body, "steps", 1, kMaxImageSteps); !s.ok()) {
    return s;
  }
  if (auto s = optional_number(body, "cfg_scale"); !s.ok()) {
    return s;
  }
  return optional_integer(body, "seed", -1, 4'294'967'295LL);
}

}  // namespace

Status check_request(ApiRoute route, const nlohmann::json& body) {
  if (auto s = optional_integer(body, "max_tokens", 1, 10'000'000); !s.ok()) {
    return s;
  }
  if (auto s = optional_integer(body, "max_completion_tokens", 1, 10'000'000); !s.ok()) {
    return s;
  }
  switch (route) {
    case ApiRoute::kChatCompletions:
      return check_chat(body);
    case ApiRoute::kCompletions:
      return check_completions(body);
    case ApiRoute::kResponses:
      return check_responses(body);
    case ApiRoute::kEmbeddings:
      return check_embeddings(body);
    case ApiRoute::kReranking:
      return check_reranking(body);
    case ApiRoute::kImageGenerations:
      return check_images(body);
    case ApiRoute::kTranscriptions:
    case ApiRoute::kImageEdits:
    case ApiRoute::kImageVariations:
    case ApiRoute::kTokenize:
      return ok_status();  // multipart: checked by their handlers; tokenize: built by the router
  }
  return ok_status();
}

bool map_max_completion_tokens(nlohmann::json& body) {
  auto it = body.find("max_completion_tokens");
  if (it == body.end() || it->is_null() || body.contains("max_tokens")) {
    return false;
  }
  body["max_tokens"] = *it;
  return true;
}

}  // namespace lemon::api
