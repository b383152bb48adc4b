// CorsWriter: a ResponseWriter that adds the request's CORS headers to
// whatever response the handler writes. Internal to src/http.
#pragma once

#include "lemon/net/server.h"

namespace lemon::http {

class CorsWriter final : public net::ResponseWriter {
 public:
  CorsWriter(net::ResponseWriter& inner, net::Headers cors)
      : inner_(inner), cors_(std::move(cors)) {}

  bool send(int status, const net::Headers& headers, std::string_view body) override {
    return inner_.send(status, with_cors(headers), body);
  }
  bool begin_chunked(int status, const net::Headers& headers) override {
    return inner_.begin_chunked(status, with_cors(headers));
  }
  bool write_chunk(std::string_view data) override { return inner_.write_chunk(data); }
  bool finish() override { return inner_.finish(); }
  bool headers_sent() const override { return inner_.headers_sent(); }
  bool client_connected() override { return inner_.client_connected(); }
  bool keep_serving_half_closed() override { return inner_.keep_serving_half_closed(); }
  int client_fd() const override { return inner_.client_fd(); }
  bool upgrade_to_websocket(std::string_view accept, const net::Headers& headers,
                            std::shared_ptr<net::WebSocketHandler> handler,
                            std::size_t max_message) override {
    // A browser's WebSocket is not a CORS request: its Origin was judged.
    return inner_.upgrade_to_websocket(accept, headers, std::move(handler), max_message);
  }

 private:
  net::Headers with_cors(const net::Headers& headers) const {
    if (cors_.empty()) {
      return headers;
    }
    net::Headers merged = headers;
    for (const auto& [k, v] : cors_.fields()) {
      merged.set(k, v);
    }
    return merged;
  }

  net::ResponseWriter& inner_;
  net::Headers cors_;
};

}  // namespace lemon::http
