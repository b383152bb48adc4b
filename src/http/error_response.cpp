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

}  // namespace lemon::http
