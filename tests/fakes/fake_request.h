// Reading an inference request body: JSON parsing with llama.cpp-style 400
// errors, the number of tokens to generate, the echoed model name.
#pragma once

#include <initializer_list>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "fake_knobs.h"
#include "fake_reply.h"

namespace fake {

// Parses the body as a JSON object into `out`; on failure answers 400
// invalid_request_error and returns false.
bool parse_json_body(const JobPtr& job, const httplib::Request& req, httplib::Response& res,
                     nlohmann::json* out);

// Answers 400 invalid_request_error with `message`.
void reply_bad_request(const JobPtr& job, httplib::Response& res, const std::string& message);

struct TokenCount {
  int n = 8;               // tokens to generate
  bool hit_limit = false;  // the client's limit was reached (finish_reason "length")
};

// Forced count (lemon_fake / tokens knob) first, then the first non-negative
// integer among `limit_keys` in the body, else 8.
TokenCount count_tokens(const GenParams& params, const nlohmann::json& body,
                        std::initializer_list<const char*> limit_keys);

// The body's "model" string if present, else `fallback`.
std::string model_name(const nlohmann::json& body, const std::string& fallback);

// True when `obj` is an object whose `key` is the boolean true.
bool json_true(const nlohmann::json& obj, const char* key);

// Deterministic prompt size derived from the request body length.
int prompt_tokens(const httplib::Request& req);

}  // namespace fake
