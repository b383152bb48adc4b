// The ResponseWriter behind every server connection: writes one response to
// a blocking client socket. Each response head goes out with its body (or
// each chunk with its framing) in one sendmsg, so TCP_NODELAY never splits a
// logical write into several segments waiting on each other.
//
// Internal to src/net. Thread-safety: owned by the connection thread.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "lemon/core/error.h"
#include "lemon/net/server.h"

namespace lemon::net::detail {

class WebSocketLoop;

struct ResponseMode {
  bool head_request = false;  // HEAD: write no body
  bool http10 = false;        // HTTP/1.0 client: no chunked coding
  bool keep_alive = true;     // the connection may serve another request
};

class SocketResponseWriter final : public ResponseWriter {
 public:
  // `stopping` (may be null) turns keep-alive off for heads written after it
  // becomes true. A write the client accepts none of for `write_timeout`
  // fails, and the connection is dropped.
  SocketResponseWriter(int fd, ResponseMode mode, const std::atomic<bool>* stopping,
                       std::chrono::milliseconds write_timeout = std::chrono::seconds(60));

  bool send(int status, const Headers& headers, std::string_view body) override;
  bool begin_chunked(int status, const Headers& headers) override;
  bool write_chunk(std::string_view data) override;
  bool finish() override;
  bool headers_sent() const override { return state_ != State::kIdle; }
  bool client_connected() override;
  bool keep_serving_half_closed() override;
  int client_fd() const override { return fd_; }
  bool upgrade_to_websocket(std::string_view accept, const Headers& headers,
                            std::shared_ptr<WebSocketHandler> handler,
                            std::size_t max_message) override;

  // Lets upgrade_to_websocket() hand the connection (from `remote_addr`) to
  // `loop`; without it the writer cannot upgrade.
  void allow_upgrade(WebSocketLoop* loop, const std::string* remote_addr) {
    upgrade_loop_ = loop;
    remote_addr_ = remote_addr;
  }
  // What upgrade_to_websocket() answered with 101: the connection is the
  // WebSocket loop's to adopt (its place there reserved).
  struct Upgrade {
    std::shared_ptr<WebSocketHandler> handler;
    std::size_t max_message = 0;
  };
  std::optional<Upgrade> take_upgrade() { return std::exchange(upgrade_, std::nullopt); }

  // Answers `error` with the one error envelope (lemon/core/error_envelope.h,
  // Content-Type application/json), with Retry-After when it carries one.
  bool send_error(const Error& error);

  // A complete response was written and the connection may serve another.
  bool reusable() const { return state_ == State::kDone && keep_alive_; }

  // Told when the response's last bytes go out (the whole of send(),
  // finish()'s last chunk): from then on the client can see the response
  // end, so its connection counts as idle even if the handler has not
  // returned yet. Each is called once; `listener` outlives the
  // writer.
  class EndListener {
   public:
    virtual ~EndListener() = default;
    virtual void last_write_begins() = 0;
    virtual void last_write_done() = 0;  // written, or the write failed
  };
  void set_end_listener(EndListener* listener) { end_listener_ = listener; }

 private:
  enum class State { kIdle, kChunked, kDone, kFailed, kUpgraded };

  std::string build_head(int status, const Headers& headers,
                         std::optional<std::size_t> content_length, bool chunked);
  bool write(iovec* iov, int count);
  void remember_tail(std::string_view data);
  bool at_event_boundary() const;
  bool last_write(iovec* iov, int count);

  static constexpr std::size_t kTailSize = 4;

  int fd_;
  ResponseMode mode_;
  std::chrono::milliseconds write_timeout_;
  const std::atomic<bool>* stopping_;
  State state_ = State::kIdle;
  bool keep_alive_;
  bool raw_stream_ = false;    // HTTP/1.0 "chunked": plain bytes, then close
  bool no_body_ = false;       // HEAD or a status without a body
  bool half_closed_ = false;   // the client shut its sending side; we still answer
  bool event_stream_ = false;  // chunked text/event-stream: comments are harmless
  std::string tail_;           // the stream's last bytes, to find event boundaries
  EndListener* end_listener_ = nullptr;
  WebSocketLoop* upgrade_loop_ = nullptr;
  const std::string* remote_addr_ = nullptr;
  std::optional<Upgrade> upgrade_;
};

}  // namespace lemon::net::detail
