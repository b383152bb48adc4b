// ApiDialect: which API a route speaks, and so the shape of its errors
// The router's own and the OpenAI-compatible routes
// answer in the router's envelope (error_response.h); the Anthropic
// Messages routes in Anthropic's, {"type":"error","error":{"type","message"}};
// the Ollama routes in Ollama's, {"error":"..."}. The HTTP status always
// comes from the one ErrorCode table (error_status), so a dialect only turns
// a status into its own error type: this file is the one place where each
// API's errors are mapped, for errors a handler raises and for those that
// come back through the forward path (TranslatingWriter).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "lemon/core/error.h"
#include "lemon/net/message.h"

namespace lemon::http {

enum class ApiDialect { kLemonade, kAnthropic, kOllama };

struct DialectError {
  int status = 500;
  net::Headers headers;  // JSON, plus Retry-After when the error carries one
  std::string body;
};

// `error` as `dialect` answers it.
DialectError dialect_error(ApiDialect dialect, const Error& error);

// The body of an error answered with `status` and `message` (the router's
// envelope, or a backend's error, on its way through the forward path).
std::string dialect_error_body(ApiDialect dialect, int status, const std::string& message);

// The text that ends a stream that broke after it began: Anthropic's
// `event: error`, Ollama's {"error":...} line, the router's SSE error event.
std::string dialect_stream_error(ApiDialect dialect, int status, const std::string& message);

// Anthropic's error type for a status: invalid_request_error (400 and other
// 4xx), authentication_error (401), permission_error (403), not_found_error
// (404), request_too_large (413), rate_limit_error (429), overloaded_error
// (503, 529), timeout_error (504), api_error (other 5xx).
const char* anthropic_error_type(int status);

}  // namespace lemon::http
