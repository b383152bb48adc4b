// WebSocket (RFC 6455) in the router's own HTTP server: the handshake's
// checks, and the connection a handler gets once a request is upgraded
// (ResponseWriter::upgrade_to_websocket, server.h).
//
// An open WebSocket holds no thread. Every upgraded socket of a server waits
// in one epoll set, served by the server's WebSocket thread: it reads what
// arrives (frames checked to the letter, src/net/websocket_frame.h),
// answers pings, and calls the socket's WebSocketHandler with each complete
// message; it writes what the socket's queue holds as the client accepts
// it. Sending never blocks: messages are queued (bounded, max_queued_bytes)
// from any thread and written by the WebSocket thread.
//
// Thread-safety: a WebSocket may be used from any thread. A handler's
// methods are called on the server's WebSocket thread, one at a time, and
// must not block (a handler hands long work to a thread of its own).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/net/message.h"

namespace lemon::net {

// Close codes (RFC 6455 §7.4.1; 1013 is IANA's).
namespace close_code {
inline constexpr std::uint16_t kNormal = 1000;
inline constexpr std::uint16_t kGoingAway =
    1001;  // server stopping, or the client stopped answering
inline constexpr std::uint16_t kProtocolError = 1002;
inline constexpr std::uint16_t kUnsupportedData = 1003;  // a binary message where text is taken
inline constexpr std::uint16_t kNoStatus = 1005;         // received only: a close without a code
inline constexpr std::uint16_t kAbnormal = 1006;         // never sent: the connection just ended
inline constexpr std::uint16_t kInvalidData = 1007;      // text that is not UTF-8
inline constexpr std::uint16_t kPolicyViolation = 1008;  // not authenticated in time, too slow
inline constexpr std::uint16_t kMessageTooBig = 1009;
inline constexpr std::uint16_t kInternalError = 1011;
inline constexpr std::uint16_t kTryAgainLater = 1013;
}  // namespace close_code

// Limits and deadlines of a server's WebSockets (ServerOptions::websocket).
struct WebSocketOptions {
  int max_sockets = 256;            // open at once; past it an upgrade gets 503
  int max_sockets_per_client = 64;  // per client address
  // Bytes of frames queued for a client that does not read them; a send
  // past it is refused (the handler decides what to do: the log stream
  // closes the socket).
  std::size_t max_queued_bytes = 4u << 20;
  // A socket that has sent nothing for ping_interval is pinged; one that
  // then sends nothing (no pong, no message) for pong_timeout is closed.
  std::chrono::milliseconds ping_interval{30000};
  std::chrono::milliseconds pong_timeout{15000};
  // After our close frame, how long the client has to send its own.
  std::chrono::milliseconds close_timeout{5000};
  // A client that accepts none of the queued bytes for this long is dropped.
  std::chrono::milliseconds write_timeout{60000};
  // Pings a client may send a second; past it the socket is closed (1008).
  int max_pings_per_second = 50;
};

class WebSocket {
 public:
  virtual ~WebSocket() = default;

  enum class Sent {
    kQueued,  // it will be written as the client reads
    kFull,    // max_queued_bytes would be passed: nothing was queued
    kClosed,  // the socket is closing or closed: nothing was queued
  };
  // Queues one text message (`text` must be UTF-8).
  virtual Sent send_text(std::string_view text) = 0;
  // Starts the close handshake with `code` (a sendable one) and `reason`:
  // nothing more is sent after it; the socket ends once the client answers
  // or close_timeout passes. Idempotent.
  virtual void close(std::uint16_t code, std::string_view reason) = 0;
  // The same, dropping what is queued and not yet begun first: for a client
  // too slow to read it.
  virtual void abandon(std::uint16_t code, std::string_view reason) = 0;
  // Asks for the handler's on_wake() on the WebSocket thread, soon; many
  // calls before it runs make one. Never blocks, takes no lock a logger
  // holds: callable from a log sink.
  virtual void wake() = 0;
  // The largest message taken from now on (a socket may start small, before
  // its client authenticates).
  virtual void set_max_message(std::size_t bytes) = 0;
  // Closes the socket with `code` unless clear_deadline() runs first
  // (authentication within a time).
  virtual void set_deadline(std::chrono::steady_clock::time_point when, std::uint16_t code,
                            std::string_view reason) = 0;
  virtual void clear_deadline() = 0;
  // Bytes queued and not yet written.
  virtual std::size_t queued_bytes() const = 0;
  virtual const std::string& remote_addr() const = 0;
};

class WebSocketHandler {
 public:
  virtual ~WebSocketHandler() = default;
  // The socket is open: the 101 went out. The handler may keep `socket`.
  virtual void on_open(const std::shared_ptr<WebSocket>& socket) = 0;
  // One complete text message, UTF-8 checked.
  virtual void on_text(std::string_view text) = 0;
  // One complete binary message: false (the default) closes the socket
  // with 1003, for handlers that take text only.
  virtual bool on_binary(std::string_view /*data*/) { return false; }
  // After wake().
  virtual void on_wake() {}
  // The socket ended (a close handshake, an error, the server stopping);
  // `code` is what the client sent or kAbnormal. Called once, last.
  virtual void on_closed(std::uint16_t code) = 0;
};

// True when the request asks for a WebSocket (RFC 6455 §4.2.1): GET with
// `Upgrade: websocket` and `Connection: upgrade` (tokens, any case).
bool is_websocket_upgrade(const Request& request);

// The handshake's checks (§4.2.1), for a request is_websocket_upgrade()
// accepted: HTTP/1.1, no body, one Sec-WebSocket-Key that
// is the base64 of 16 bytes, and Sec-WebSocket-Version 13. The value of
// Sec-WebSocket-Accept, or the error to answer with: kUpgradeRequired
// (426, with `Sec-WebSocket-Version: 13`) for another version, else
// kInvalidRequest (400).
Result<std::string> check_websocket_handshake(const Request& request);

// Sec-WebSocket-Accept for a key: base64(SHA-1(key + the RFC's GUID)).
std::string websocket_accept(std::string_view key);

// The subprotocols a client offers (every Sec-WebSocket-Protocol field, each
// a comma-separated list), trimmed, in order.
std::vector<std::string> offered_subprotocols(const Request& request);

}  // namespace lemon::net
