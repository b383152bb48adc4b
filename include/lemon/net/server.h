// The client-facing HTTP/1.1 server.
//
// Model: one acceptor thread per listening socket and a pool of connection
// threads (one connection per thread at a time, blocking I/O, keep-alive).
// Threads are created on demand up to ServerOptions::max_connections, and
// idle ones are kept for reuse, so a long stream never starves /health or a
// new request (issue #3 "Thread and connection model"). Accepted sockets get
// TCP_NODELAY: the response head and body are written with one writev, and
// nothing waits on Nagle (issue #4's 43 ms trap).
//
// The server parses requests (Content-Length and chunked bodies, Expect:
// 100-continue, HEAD), enforces the body limit (413) and answers malformed
// requests itself (400); everything else goes to the Handler.
//
// Thread-safety: bind() and run() from one thread; stop() from any thread
// (also from a handler). The Handler is called concurrently from connection
// threads; the ResponseWriter it receives belongs to that thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lemon/core/error.h"
#include "lemon/net/message.h"

namespace lemon::net {

// Writes one response. Exactly one of send() or begin_chunked()...finish()
// per request; a handler that writes nothing gets a 500 envelope.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;

  // A complete response with Content-Length. Returns false if the client is
  // gone. For HEAD requests the body is not written.
  virtual bool send(int status, const Headers& headers, std::string_view body) = 0;

  // A chunked (Transfer-Encoding: chunked) response: the head is written at
  // once, each write_chunk() becomes one chunk on the wire immediately (no
  // buffering), finish() writes the last chunk. All return false once the
  // client is gone; later calls are no-ops returning false.
  virtual bool begin_chunked(int status, const Headers& headers) = 0;
  virtual bool write_chunk(std::string_view data) = 0;
  virtual bool finish() = 0;

  virtual bool headers_sent() const = 0;

  // Non-blocking check: false once the client has closed its side, reset the
  // connection, or a write failed.
  virtual bool client_connected() = 0;
  // The client socket, so a proxy can poll() it (POLLRDHUP) together with an
  // upstream socket. -1 when there is none (in-memory writers in tests).
  virtual int client_fd() const = 0;
};

using Handler = std::function<void(Request& request, ResponseWriter& writer)>;

struct ServerOptions {
  std::size_t max_body_bytes = 64u << 20;       // larger bodies get 413
  std::size_t max_header_bytes = 64u << 10;     // larger heads get 431
  int max_connections = 1024;                   // concurrent connections (= threads)
  int spare_threads = 4;                        // idle threads kept warm
  std::chrono::seconds keep_alive_timeout{60};  // idle keep-alive connection
  std::chrono::seconds read_timeout{60};        // while a request is half-read
  std::size_t thread_stack_bytes = 512u << 10;
};

class Server {
 public:
  Server(ServerOptions options, Handler handler);
  ~Server();  // stops and joins
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens. "localhost" binds both 127.0.0.1 and ::1 (either may
  // fail alone); "0.0.0.0"/"::" bind all addresses. Port 0 picks a free port.
  // Returns the bound port. May be called once.
  Result<int> bind(const std::string& host, int port);

  // Accepts and serves until stop(). Blocks.
  void run();

  // Stops accepting, closes idle connections, and makes run() return once
  // in-flight handlers finish. Thread-safe and idempotent; never blocks.
  void stop();

  // Connections currently open (for tests and /health diagnostics).
  int open_connections() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lemon::net
