// ServingStatus: what the HTTP server tells the rooms about itself, for
// /ready, /metrics and the long-lived event and log streams. ApiServer
// implements it.
//
// Thread-safety: every method may be called from any thread, at any time.
#pragma once

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
};

}  // namespace lemon::http
