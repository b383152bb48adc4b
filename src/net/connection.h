// Serves one client connection on the calling thread: reads requests in a
// keep-alive loop, hands each to the Handler with a SocketResponseWriter, and
// answers what the handler cannot (malformed requests, limits, exceptions,
// handlers that wrote nothing) with the JSON error envelope.
//
// Internal to src/net. Thread-safety: one call per connection thread; the
// context is shared read-only.
#pragma once

#include <atomic>

#include "lemon/net/server.h"
#include "request_reader.h"
#include "thread_pool.h"

namespace lemon::net::detail {

struct ConnectionContext {
  const ServerOptions* options = nullptr;
  const Handler* handler = nullptr;
  int stop_fd = -1;  // readable once the server stops
  const std::atomic<bool>* stopping = nullptr;
  RequestMemory* memory = nullptr;  // shared by every connection
};

// Serves `connection` until it closes, then closes its fd.
void serve_connection(PendingConnection& connection, const ConnectionContext& context);

// Answers 503 "server_busy" on a connection the server will not serve, and
// closes it without blocking the caller for long.
void reject_busy(int fd);

}  // namespace lemon::net::detail
