// The client-facing HTTP/1.1 server.
//
// Model: one acceptor thread per listening socket and a pool of connection
// threads that serve one connection at a time with blocking I/O. An idle
// keep-alive connection holds no thread: it waits in an epoll set on which
// the idle threads themselves wait, so a thread that has answered one request
// takes the next ready connection without sleeping. Threads
// are created when the last waiting one starts serving, up to the connection
// limit, and idle ones are kept for reuse, so a long stream never starves
// /health or a new request.
// Accepted sockets get TCP_NODELAY: the response head and body are written
// with one writev, and nothing waits on Nagle, which would add 40 ms.
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
#include <optional>
#include <string>
#include <string_view>

#include "lemon/core/error.h"
#include "lemon/net/message.h"
#include "lemon/net/websocket.h"

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

  // Non-blocking check: false once the client is gone (reset the connection,
  // closed it, or a write failed). A client that only shut down its sending
  // side (a half-close) is still connected if keep_serving_half_closed()
  // says so.
  virtual bool client_connected() = 0;
  // The client shut down its sending side after its request. True if the
  // response can still reach it, after a probe that a client that in fact
  // closed entirely answers with a reset (noticed by the next check or write):
  // an interim "100 Continue" if nothing was sent yet (RFC 9110 15.2: clients
  // must accept unexpected 1xx), an SSE comment if an event stream is between
  // two events, none inside an event (the stream's next write tells). False
  // for HTTP/1.0 clients (no 1xx allowed), other started bodies, and when the
  // probe cannot be written: treat the client as gone.
  virtual bool keep_serving_half_closed() { return false; }
  // The client socket, so a proxy can poll() it (POLLRDHUP) together with an
  // upstream socket. -1 when there is none (in-memory writers in tests).
  virtual int client_fd() const = 0;

  // Answers a WebSocket handshake (websocket.h) with 101 Switching
  // Protocols, `accept` as Sec-WebSocket-Accept and `headers` (a chosen
  // Sec-WebSocket-Protocol), and hands the connection, once the handler
  // returns, to the server's WebSocket thread, where `handler` gets its
  // messages (at most `max_message` bytes each until the handler says
  // otherwise). False, with nothing written, when the server has no room for
  // another WebSocket (answer 503), or the writer cannot upgrade (one that
  // is not a client socket's, or whose response has begun).
  virtual bool upgrade_to_websocket(std::string_view /*accept*/, const Headers& /*headers*/,
                                    // An override keeps the handler: taken by value.
                                    // NOLINTNEXTLINE(performance-unnecessary-value-param)
                                    std::shared_ptr<WebSocketHandler> /*handler*/,
                                    std::size_t /*max_message*/) {
    return false;
  }
};

using Handler = std::function<void(Request& request, ResponseWriter& writer)>;

// An answer given as soon as a request's head is complete, before its body is
// read (a HeadCheck's verdict): the connection is closed after it without
// reading the body.
struct EarlyAnswer {
  int status = 0;
  Headers headers;   // Content-Type and the like; framing is the server's
  std::string body;  // usually the API's JSON error envelope
};

// Called on a connection thread once a request's head is parsed (method,
// target, path, query, headers, remote_addr set; body empty). nullopt lets
// the request proceed to its body and the Handler; what it stores in
// request.context stays with the request until it has been handled.
using HeadCheck = std::function<std::optional<EarlyAnswer>(Request&)>;

// Limits and deadlines against slow or hostile clients. Every
// deadline is a total for its phase, never a per-read timeout that each byte
// restarts.
struct ServerOptions {
  std::size_t max_body_bytes = 64u << 20;    // larger bodies get 413 before they are read
  std::size_t max_header_bytes = 64u << 10;  // larger heads get 431
  // Bytes held by request bodies across all connections; past it new bodies
  // get 503 with Retry-After. Charged as bytes arrive, never reserved ahead.
  std::size_t max_request_memory = 256u << 20;
  int max_connections = 1024;  // concurrent connections (threads: those busy, plus one)
  // Per client address. At either limit the connection idle longest (of
  // that address, or of any) is closed to make room; 503 only when every
  // one is busy in a handler.
  int max_connections_per_client = 256;
  int spare_threads = 4;  // idle threads kept warm (at least one always is)
  // An idle keep-alive connection (no byte of a next request) is closed.
  std::chrono::milliseconds keep_alive_timeout{60000};
  // A keep-alive connection whose next request has not begun this long after
  // its response is parked: it waits in the workers' epoll set and holds no
  // thread. Until then its thread waits for it, which costs less than
  // parking and waking for a client that sends its next request at once.
  // Zero parks at once.
  std::chrono::milliseconds park_after{50};
  // From a request's first byte (blank lines before it included) until its
  // head is complete; past it, 408 and close (slowloris).
  std::chrono::milliseconds header_timeout{10000};
  // A body that makes no progress for this long is dropped (408).
  std::chrono::milliseconds body_idle_timeout{30000};
  // ... and so is one that, after body_rate_grace, has averaged fewer than
  // body_min_rate bytes a second since its head.
  std::size_t body_min_rate = 1024;
  std::chrono::milliseconds body_rate_grace{10000};
  // A client that accepts none of a response's bytes for this long is dropped.
  std::chrono::milliseconds write_timeout{60000};
  std::size_t thread_stack_bytes = 512u << 10;
  HeadCheck head_check;  // may be empty
  // Upgraded connections (ResponseWriter::upgrade_to_websocket).
  WebSocketOptions websocket;
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

  // Stops accepting, closes idle connections, answers requests that arrive
  // on open connections with 503 (Connection: close), sends every WebSocket
  // a close frame (1001), and makes run() return once in-flight handlers
  // finish and the WebSockets' close handshakes are done (at most 2 s).
  // Thread-safe and idempotent; never blocks.
  void stop();

  // Connections currently open (for tests and /health diagnostics); an
  // upgraded one counts as a WebSocket from then on, not here.
  int open_connections() const;
  // WebSockets open (or being opened) now.
  int open_websockets() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lemon::net
