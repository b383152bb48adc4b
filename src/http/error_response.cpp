#include "lemon/http/error_response.h"

#include "lemon/net/server.h"

namespace lemon::http {

net::Headers json_headers() {
  return net::Headers{{"Content-Type", "application/json"}};
}

net::Headers error_headers(const Error& error) {
  net::Headers headers = json_headers();
  if (auto seconds = error.retry_after(); seconds && *seconds > 0) {
    headers.add("Retry-After", std::to_string(*seconds));
  }
  return headers;
}

void send_json(net::ResponseWriter& writer, int status, const nlohmann::json& j) {
  writer.send(status, json_headers(), json_text(j));
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string sse_error_event(const std::string& envelope_text, StreamFraming framing) {
  if (framing == StreamFraming::kChatCompletions) {
    return "data: " + envelope_text + "\n\n";
  }
  // The Responses API's error event: its fields at the top level.
  const auto envelope = nlohmann::json::parse(envelope_text, nullptr, false);
  const nlohmann::json& e =
      envelope.is_object() && envelope.contains("error") ? envelope["error"] : envelope;
  nlohmann::json event = {{"type", "error"}};
  for (const char* field : {"code", "message", "param"}) {
    event[field] = e.is_object() && e.contains(field) ? e[field] : nlohmann::json(nullptr);
  }
  return "event: error\ndata: " + json_text(event) + "\n\n";
}

void end_stream_with_error(net::ResponseWriter& writer, const std::string& envelope_text,
                           StreamFraming framing) {
  writer.write_chunk(sse_error_event(envelope_text, framing));
  if (framing == StreamFraming::kChatCompletions) {
    writer.write_chunk("data: [DONE]\n\n");
  }
  writer.finish();
}

void write_error(net::ResponseWriter& writer, const Error& error, StreamFraming framing) {
  std::string body = error_envelope(error);
  if (!writer.headers_sent()) {
    writer.send(error_status(error), error_headers(error), body);
    return;
  }
  end_stream_with_error(writer, body, framing);
}

}  // namespace lemon::http
