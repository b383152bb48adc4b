// The one error envelope every answer of ours uses, from the HTTP server's
// own refusals (net) to every API route (docs/api.md "Errors"):
//   {"error":{"message":"...","type":"...","param":<string|null>,"code":"..."}}
// Status, type and code come from the ErrorCode alone, through one table
// (error_shape); a backend's own status is kept when the error came from a
// backend (Error::upstream_status). The type for an error known only by its
// status (a backend's answer) comes from error_type_for_status.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "lemon/core/error.h"

namespace lemon {

struct ErrorShape {
  int status;
  const char* type;  // "invalid_request_error", "authentication_error", "server_error", ...
  const char* code;  // stable: "model_not_found", "model_load_error", ...
};

// The table: ErrorCode -> (HTTP status, type, code).
ErrorShape error_shape(ErrorCode code);

// The type of an error known only by its HTTP status: "server_error" for
// 5xx, else "invalid_request_error".
const char* error_type_for_status(int status);

// The status to answer with: the backend's own status when the error carries
// one, else the table's.
int error_status(const Error& error);

// The envelope's text, keys in the order above. The message includes
// Error::detail() (a backend's output tail) after a blank line when present;
// invalid UTF-8 in it (a client's or a backend's bytes quoted in a message)
// becomes U+FFFD, so the body is always valid JSON.
std::string error_envelope(const Error& error);

}  // namespace lemon
