// The one error envelope every route uses (docs/api.md "Errors"):
//   {"error":{"message":"...","type":"...","param":<string|null>,"code":"..."}}
// The HTTP status, type and code come from the ErrorCode alone, through one
// table (error_status); a backend's own status is kept when the error came
// from a backend (Error::upstream_status).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/net/message.h"

namespace lemon::net {
class ResponseWriter;
}

namespace lemon::http {

struct ErrorShape {
  int status;
  const char* type;  // "invalid_request_error", "authentication_error", "server_error", ...
  const char* code;  // stable: "model_not_found", "model_load_error", ...
};

// The table: ErrorCode -> (HTTP status, type, code).
ErrorShape error_shape(ErrorCode code);

// The status to answer with: the backend's own status when the error carries
// one, else the table's.
int error_status(const Error& error);

// The envelope as JSON. The message includes Error::detail() (backend output
// tail) after a blank line when present.
nlohmann::json error_body(const Error& error);

// Serializes `j` for a response body; invalid UTF-8 in strings (a client's or
// a backend's bytes quoted in a message) becomes U+FFFD instead of throwing.
std::string json_text(const nlohmann::json& j);

// Headers for a JSON response.
net::Headers json_headers();

// Answers `status` with `j` as the body (json_headers, json_text).
void send_json(net::ResponseWriter& writer, int status, const nlohmann::json& j);
// Headers for an error response: JSON, plus Retry-After when the error
// carries one (queue full, load cooldown).
net::Headers error_headers(const Error& error);

}  // namespace lemon::http
