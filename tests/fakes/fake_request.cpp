#include "fake_request.h"

#include "fake_runtime.h"
#include "fake_util.h"

namespace fake {
namespace {

constexpr int kDefaultTokens = 8;
constexpr int kMaxTokens = 1000000;

}  // namespace

void reply_bad_request(const JobPtr& job, httplib::Response& res, const std::string& message) {
  reply_now(job, res, 400, llama_error_json(400, message, "invalid_request_error"));
}

bool parse_json_body(const JobPtr& job, const httplib::Request& req, httplib::Response& res,
                     json* out) {
  try {
    *out = json::parse(req.body);
  } catch (const json::exception& e) {
    reply_bad_request(job, res, std::string("Failed to parse JSON: ") + e.what());
    return false;
  }
  if (!out->is_object()) {
    reply_bad_request(job, res, "The request body must be a JSON object");
    return false;
  }
  return true;
}

TokenCount count_tokens(const GenParams& params, const json& body,
                        std::initializer_list<const char*> limit_keys) {
  if (params.tokens) {
    return {*params.tokens < 0 ? 0 : *params.tokens, false};
  }
  for (const char* key : limit_keys) {
    if (body.contains(key) && body[key].is_number_integer()) {
      long long v = body[key].get<long long>();
      if (v >= 0) {
        return {static_cast<int>(v < kMaxTokens ? v : kMaxTokens), true};
      }
    }
  }
  return {kDefaultTokens, false};
}

std::string model_name(const json& body, const std::string& fallback) {
  if (body.contains("model") && body["model"].is_string()) {
    return body["model"].get<std::string>();
  }
  return fallback;
}

bool json_true(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_boolean() && obj[key].get<bool>();
}

int prompt_tokens(const httplib::Request& req) {
  return approx_tokens(req.body);
}

}  // namespace fake
