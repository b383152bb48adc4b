#include "lemon/http/json_request.h"

namespace lemon::http {
namespace {

constexpr int kMaxDepth = 256;

// Bracket depth outside strings; cheap and bounded, so a hostile body cannot
// exhaust the stack of a connection thread.
bool too_deep(std::string_view s) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) {
        return true;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

Result<nlohmann::json> parse_json_object(std::string_view body) {
  if (too_deep(body)) {
    return Error(ErrorCode::kInvalidRequest, "request body nests deeper than 256 levels");
  }
  try {
    auto j = nlohmann::json::parse(body);
    if (!j.is_object()) {
      return Error(ErrorCode::kInvalidRequest, "request body must be a JSON object");
    }
    return j;
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double
    // (found by fuzz_json_requests: tests/fuzz/corpus/fuzz_json_requests).
    return Error(ErrorCode::kInvalidRequest,
                 std::string("request body is not valid JSON: ") + e.what());
  }
}

Result<std::string> string_field(const nlohmann::json& body, const char* name, bool required) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) {
    if (required) {
      return Error(ErrorCode::kInvalidRequest, std::string("'") + name + "' is required", name);
    }
    return std::string();
  }
  if (!it->is_string()) {
    return Error(ErrorCode::kInvalidRequest, std::string("'") + name + "' must be a string", name);
  }
  if (required && it->get_ref<const std::string&>().empty()) {
    return Error(ErrorCode::kInvalidRequest, std::string("'") + name + "' must not be empty", name);
  }
  return it->get<std::string>();
}

Result<bool> bool_field(const nlohmann::json& body, const char* name, bool fallback) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) {
    return fallback;
  }
  if (!it->is_boolean()) {
    return Error(ErrorCode::kInvalidRequest, std::string("'") + name + "' must be a boolean", name);
  }
  return it->get<bool>();
}

std::string FieldReader::string(const char* name, bool required) {
  return take(string_field(body_, name, required));
}

bool FieldReader::boolean(const char* name, bool fallback) {
  return take(bool_field(body_, name, fallback), fallback);
}

Result<ModelRequest> parse_model_request(std::string_view body) {
  auto parsed = parse_json_object(body);
  if (!parsed.ok()) {
    return std::move(parsed).error();
  }
  auto name = string_field(*parsed, "model_name", false);
  if (name.ok() && name->empty()) {
    name = string_field(*parsed, "model", false);
  }
  if (!name.ok()) {
    return std::move(name).error();
  }
  if (name->empty()) {
    return Error(ErrorCode::kInvalidRequest, "'model_name' is required", "model_name");
  }
  return ModelRequest{std::move(parsed).value(), std::move(name).value()};
}

}  // namespace lemon::http
