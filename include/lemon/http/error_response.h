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

// How an error ends a stream that has begun: Chat Completions' (and the
// other OpenAI-style routes') `data: {"error":...}` then `data: [DONE]`, or
// the Responses API's `event: error` with {"type":"error",...} and no
// [DONE], which that API does not have.
enum class StreamFraming { kChatCompletions, kResponses };

// The SSE error event for `envelope_text` (the text of {"error":{...}}) in
// `framing`: `data: <envelope>`, or `event: error` with the error's code,
// message and param at the top level. Without the [DONE] that follows a
// chat completion's error.
std::string sse_error_event(const std::string& envelope_text, StreamFraming framing);

// Ends a started stream with the error in `envelope_text` (the text of
// {"error":{...}}): its error event as `framing` has it, the [DONE] a chat
// completion's stream ends with, and the stream's end.
void end_stream_with_error(net::ResponseWriter& writer, const std::string& envelope_text,
                           StreamFraming framing);

// Writes `error` to the client: the envelope with its status, or, once a
// stream has started, its error event as `framing` has it, and the end.
void write_error(net::ResponseWriter& writer, const Error& error,
                 StreamFraming framing = StreamFraming::kChatCompletions);

// Writes `result`'s error when it failed, and says whether it did:
//   auto body = parse_json_object(r.body);
//   if (wrote_error(w, body)) { return; }
template <class T>
bool wrote_error(net::ResponseWriter& writer, const Result<T>& result,
                 StreamFraming framing = StreamFraming::kChatCompletions) {
  if (result.ok()) {
    return false;
  }
  write_error(writer, result.error(), framing);
  return true;
}

}  // namespace lemon::http
