// ServingStatus: what the HTTP server tells the rooms about itself, for
// /ready, /metrics and the long-lived event and log streams. ApiServer
// implements it.
//
// Thread-safety: every method may be called from any thread, at any time.
#pragma once

#include <optional>

namespace lemon::http {

class ServingStatus {
 public:
  virtual ~ServingStatus() = default;
  // True once a graceful shutdown began: /ready says no, streams end.
  virtual bool draining() const = 0;
  // Client connections open now, on every listener.
  virtual int open_connections() const = 0;
  // Streaming responses being written now (inference, pulls, events, logs).
  virtual int open_streams() const = 0;
  // The port WebSocket clients are told to use (/health's websocket_port):
  // the second port when one is bound, else the main port, which serves
  // WebSocket too. nullopt before the server is bound.
  virtual std::optional<int> websocket_port() const { return std::nullopt; }
};

}  // namespace lemon::http
