// One client connection between and during its requests: its socket, and a
// reader holding any bytes of a next request already received. serve() reads
// requests in a keep-alive loop, hands each to the Handler with a
// SocketResponseWriter, and answers what the handler cannot (malformed
// requests, limits, exceptions, handlers that wrote nothing) with the JSON
// error envelope. It returns instead of waiting for a next request that has
// not begun, so the connection can be parked with the ConnectionWorkers and
// hold no thread while idle.
//
// Internal to src/net. Thread-safety: a connection is served by one thread at
// a time (the ConnectionWorkers hand it over); the context is shared
// read-only.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "connection_registry.h"
#include "io.h"
#include "lemon/net/server.h"
#include "request_reader.h"

namespace lemon::net::detail {

class WebSocketLoop;

struct ConnectionContext {
  const ServerOptions* options = nullptr;
  const Handler* handler = nullptr;
  int stop_fd = -1;  // readable once the server stops
  const std::atomic<bool>* stopping = nullptr;
  RequestMemory* memory = nullptr;      // shared by every connection
  WebSocketLoop* websockets = nullptr;  // where upgraded connections go
};

// An accepted socket and what counts it as open.
struct PendingConnection {
  int fd = -1;
  std::string remote_addr;
  std::atomic<int>* open_count = nullptr;  // set by the workers
  ConnectionRegistry* registry = nullptr;  // set by the acceptor
  std::uint64_t registry_id = 0;

  // Stops counting this connection as open (in the workers and the
  // registry). Called just before its socket is shut down, so a client that
  // saw the close also sees the slot free; called again on destruction if
  // nothing did earlier.
  void release() {
    if (open_count != nullptr) {
      open_count->fetch_sub(1, std::memory_order_relaxed);
      open_count = nullptr;
    }
    if (registry != nullptr) {
      registry->leave(registry_id);
      registry = nullptr;
    }
  }
};

class ClientConnection {
 public:
  // Takes the socket of `pending`; its counts are taken over later by the
  // workers (open_count) and are released when the connection closes.
  ClientConnection(PendingConnection pending, const ConnectionContext& context);
  ~ClientConnection();  // releases and closes, if serve() did not
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  enum class After {
    kPark,    // open and idle: no byte of a next request is at hand
    kClosed,  // released and closed
  };
  // Serves the requests whose bytes are at hand, the first one always (the
  // socket was readable). With `may_park` false it waits for next requests
  // itself, as long as keep_alive_timeout and the server's stop allow, and
  // returns only kClosed.
  After serve(bool may_park);

  // Answers 503 "server_busy" without reading a request, and closes.
  void refuse_busy();

  int fd() const { return fd_.get(); }
  PendingConnection& pending() { return pending_; }

 private:
  void close_quietly();

  PendingConnection pending_;
  UniqueFd fd_;
  const ConnectionContext& context_;
  RequestReader reader_;
};

// Answers 503 "server_busy" on a connection the server will not serve, and
// closes it without blocking the caller for long.
void reject_busy(int fd);

}  // namespace lemon::net::detail
