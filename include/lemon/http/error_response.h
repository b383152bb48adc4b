// JSON responses: the body's text, the headers, and the headers of an error
// answer. The error envelope itself, and the status, type and code of each
// ErrorCode, are core's (lemon/core/error_envelope.h), shared with net.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/core/error_envelope.h"
#include "lemon/net/message.h"

namespace lemon::net {
class ResponseWriter;
}

namespace lemon::http {

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
