#include "websocket_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <exception>

#include "lemon/core/log.h"

namespace lemon::net::detail {
namespace {

// Read at most this much per readable event, so one client cannot starve
// the others on the loop thread.
constexpr std::size_t kReadBudget = 256u << 10;
constexpr std::size_t kSocketReadChunk = 64u << 10;
// Frames gathered into one sendmsg.
constexpr int kMaxIov = 16;

// Runs a handler callback; an exception ends the socket (1011) instead of
// the loop thread.
template <typename F>
bool guarded(const char* what, F&& f) {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    logger("http")->error("WebSocket handler {} threw: {}", what, e.what());
  } catch (...) {
    logger("http")->error("WebSocket handler {} threw a non-standard exception", what);
  }
  return false;
}

}  // namespace

WebSocketConnection::WebSocketConnection(WebSocketScheduler& scheduler,
                                         const WebSocketOptions& options, std::uint64_t id, int fd,
                                         std::string remote_addr,
                                         std::shared_ptr<WebSocketHandler> handler,
                                         std::size_t max_message)
    : scheduler_(scheduler),
      options_(options),
      id_(id),
      remote_addr_(std::move(remote_addr)),
      max_message_(max_message),
      fd_(fd),
      handler_(std::move(handler)),
      assembler_(max_message) {}

WebSocketConnection::~WebSocketConnection() = default;

WebSocket::Sent WebSocketConnection::send_text(std::string_view text) {
  MutexLock lock(mu_);
  if (closing_ || ended_) {
    return Sent::kClosed;
  }
  const std::string frame = ws::encode_frame(ws::Opcode::kText, text);
  if (queued_ + frame.size() > options_.max_queued_bytes) {
    return Sent::kFull;
  }
  queued_ += frame.size();
  queue_.push_back(frame);
  come_locked();
  return Sent::kQueued;
}

void WebSocketConnection::close(std::uint16_t code, std::string_view reason) {
  close_with(code, reason, false);
}

void WebSocketConnection::abandon(std::uint16_t code, std::string_view reason) {
  close_with(code, reason, true);
}

void WebSocketConnection::close_with(std::uint16_t code, std::string_view reason, bool discard) {
  MutexLock lock(mu_);
  if (closing_ || ended_) {
    return;
  }
  closing_ = true;
  if (discard) {
    // Only a frame already begun must go out whole.
    while (queue_.size() > (front_written_ > 0 ? 1u : 0u)) {
      queued_ -= queue_.back().size();
      queue_.pop_back();
    }
  }
  close_frame_ = ws::encode_frame(
      ws::Opcode::kClose,
      ws::close_payload(ws::sendable_close_code(code) ? code : close_code::kInternalError, reason));
  come_locked();
}

void WebSocketConnection::wake() {
  MutexLock lock(mu_);
  if (wake_ || ended_) {
    return;
  }
  wake_ = true;
  come_locked();
}

void WebSocketConnection::set_max_message(std::size_t bytes) {
  MutexLock lock(mu_);
  max_message_ = bytes;
}

void WebSocketConnection::set_deadline(Clock::time_point when, std::uint16_t code,
                                       std::string_view reason) {
  MutexLock lock(mu_);
  deadline_ = when;
  deadline_code_ = code;
  deadline_reason_ = std::string(reason);
  come_locked();  // the loop looks at its timers again
}

void WebSocketConnection::clear_deadline() {
  MutexLock lock(mu_);
  deadline_.reset();
}

std::size_t WebSocketConnection::queued_bytes() const {
  MutexLock lock(mu_);
  return queued_;
}

void WebSocketConnection::open(const std::shared_ptr<WebSocketConnection>& self,
                               std::string already_read, Clock::time_point now) {
  last_read_ = now;
  last_write_progress_ = now;
  ping_window_ = now;
  auto handler = handler_;
  if (!guarded("on_open", [&] { handler->on_open(self); })) {
    fail({close_code::kInternalError, "internal error"});
    return;
  }
  input_ = std::move(already_read);
  read(now);  // handles what came with the handshake, and what came since
}

void WebSocketConnection::read(Clock::time_point now) {
  if (finished_) {
    return;
  }
  std::size_t budget = kReadBudget;
  bool eof = false;
  char chunk[kSocketReadChunk];
  while (budget > 0 && !eof) {
    const ssize_t n = ::recv(fd_.get(), chunk, std::min(sizeof chunk, budget), MSG_DONTWAIT);
    if (n > 0) {
      input_.append(chunk, static_cast<std::size_t>(n));
      budget -= static_cast<std::size_t>(n);
      last_read_ = now;
      ping_sent_.reset();  // any byte shows the client is there
      if (static_cast<std::size_t>(n) < sizeof chunk) {
        break;
      }
      continue;
    }
    if (n < 0 && (errno == EINTR)) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    }
    eof = true;  // closed, reset or failed
  }
  std::size_t at = 0;
  while (!finished_ && !failed_) {
    std::size_t max_payload = 0;
    {
      MutexLock lock(mu_);
      max_payload = max_message_;
    }
    assembler_.set_max_message(max_payload);
    ws::Frame frame;
    std::size_t used = 0;
    ws::FrameError error;
    const auto step = ws::parse_client_frame(std::string_view(input_).substr(at), max_payload,
                                             frame, used, error);
    if (step == ws::ParseStep::kNeedMore) {
      break;
    }
    if (step == ws::ParseStep::kError) {
      fail(error);
      break;
    }
    at += used;
    handle(std::move(frame), now);
  }
  input_.erase(0, at);
  if (eof && !finished_) {
    // The client closed (or reset) the connection: what is queued (a close
    // frame that answers its own) goes out if it can, then the end.
    flush(now);
    finished_ = true;
  }
  refresh_timer();
}

void WebSocketConnection::handle(ws::Frame frame, Clock::time_point now) {
  if (close_received_) {
    return;  // nothing after a close frame counts (§5.5.1)
  }
  auto outcome = assembler_.add(std::move(frame));
  switch (outcome.kind) {
    case ws::MessageAssembler::Kind::kNone:
      return;
    case ws::MessageAssembler::Kind::kError:
      fail(outcome.error);
      return;
    case ws::MessageAssembler::Kind::kControl:
      on_control(outcome.opcode, std::move(outcome.message), now);
      return;
    case ws::MessageAssembler::Kind::kMessage:
      break;
  }
  {
    MutexLock lock(mu_);
    if (closing_) {
      return;  // we are closing: messages are no longer handled
    }
  }
  auto handler = handler_;
  bool taken = true;
  const bool ok = outcome.opcode == ws::Opcode::kText
                      ? guarded("on_text", [&] { handler->on_text(outcome.message); })
                      : guarded("on_binary", [&] { taken = handler->on_binary(outcome.message); });
  if (!ok) {
    close_with(close_code::kInternalError, "internal error", false);
  } else if (!taken) {
    close_with(close_code::kUnsupportedData, "binary messages are not taken", false);
  }
}

void WebSocketConnection::on_control(ws::Opcode opcode, std::string payload,
                                     Clock::time_point now) {
  if (opcode == ws::Opcode::kPing) {
    if (now - ping_window_ >= std::chrono::seconds(1)) {
      ping_window_ = now;
      pings_in_window_ = 0;
    }
    if (++pings_in_window_ > options_.max_pings_per_second) {
      fail({close_code::kPolicyViolation, "too many pings"});
      return;
    }
    MutexLock lock(mu_);
    if (!ended_ && !close_frame_) {
      // One pong for the latest ping is enough (§5.5.3): a flood of pings
      // holds one pong, never a queue of them.
      pong_ = std::move(payload);
      come_locked();
    }
    return;
  }
  if (opcode == ws::Opcode::kPong) {
    return;  // read() already noted the client is alive
  }
  // A close frame.
  ws::CloseBody body;
  ws::FrameError error;
  if (!ws::parse_close_payload(payload, body, error)) {
    fail(error);
    return;
  }
  close_received_ = true;
  received_code_ = body.code;
  // Answer with the same code (§5.5.1), after what is queued; the socket
  // ends once that is out (the server closes the TCP connection first).
  close_with(body.code == close_code::kNoStatus ? close_code::kNormal : body.code, body.reason,
             false);
}

void WebSocketConnection::fail(const ws::FrameError& error) {
  failed_ = true;
  close_with(error.code, error.reason, true);
}

bool WebSocketConnection::flush(Clock::time_point now) {
  if (finished_) {
    return false;
  }
  for (;;) {
    iovec iov[kMaxIov];
    int count = 0;
    {
      MutexLock lock(mu_);
      if (front_written_ == 0) {
        // At a frame boundary: control frames go first.
        if (pong_) {
          queue_.push_front(ws::encode_frame(ws::Opcode::kPong, *pong_));
          pong_.reset();
        }
        if (ping_due_) {
          queue_.push_front(ws::encode_frame(ws::Opcode::kPing, ""));
          ping_due_ = false;
        }
      }
      if (queue_.empty() && close_frame_) {
        queue_.push_back(std::move(*close_frame_));
        close_frame_.reset();
      }
      for (const auto& frame : queue_) {
        if (count == kMaxIov) {
          break;
        }
        const std::size_t skip = count == 0 ? front_written_ : 0;
        iov[count].iov_base = const_cast<char*>(frame.data() + skip);
        iov[count].iov_len = frame.size() - skip;
        ++count;
      }
    }
    if (count == 0) {
      if (close_sent_ && (close_received_ || failed_)) {
        finished_ = true;  // both close frames are out, or the connection failed
      }
      return false;
    }
    const long sent = send_once(fd_.get(), iov, count);
    if (sent == -EAGAIN || sent == -EWOULDBLOCK) {
      return true;
    }
    if (sent < 0) {
      finished_ = true;  // the client is gone
      return false;
    }
    last_write_progress_ = now;
    MutexLock lock(mu_);
    auto left = static_cast<std::size_t>(sent);
    while (left > 0 && !queue_.empty()) {
      const std::size_t rest = queue_.front().size() - front_written_;
      const std::size_t take = std::min(rest, left);
      front_written_ += take;
      left -= take;
      if (front_written_ == queue_.front().size()) {
        const std::string& done = queue_.front();
        const bool is_close = (static_cast<std::uint8_t>(done[0]) & 0x0F) == 0x8;
        const bool is_data = (static_cast<std::uint8_t>(done[0]) & 0x08) == 0;
        if (is_data) {
          queued_ -= done.size();
        }
        if (is_close) {
          close_sent_ = now;
        }
        queue_.pop_front();
        front_written_ = 0;
      }
    }
    if (close_sent_ && (close_received_ || failed_)) {
      // The handshake is complete, or the connection failed: end now.
      finished_ = true;
      return false;
    }
  }
}

void WebSocketConnection::come_locked() {
  if (!scheduled_ && !ended_) {
    scheduled_ = true;
    scheduler_.schedule(id_);
  }
}

void WebSocketConnection::taken_up() {
  MutexLock lock(mu_);
  scheduled_ = false;
}

void WebSocketConnection::run_wake() {
  {
    MutexLock lock(mu_);
    if (!wake_) {
      return;
    }
    wake_ = false;
  }
  if (finished_) {
    return;
  }
  auto handler = handler_;
  if (!guarded("on_wake", [&] { handler->on_wake(); })) {
    close_with(close_code::kInternalError, "internal error", false);
  }
}

void WebSocketConnection::tick(Clock::time_point now) {
  if (finished_) {
    return;
  }
  std::optional<std::pair<std::uint16_t, std::string>> deadline_passed;
  bool writing = false;
  {
    MutexLock lock(mu_);
    if (deadline_ && now >= *deadline_) {
      deadline_passed.emplace(deadline_code_, deadline_reason_);
      deadline_.reset();
    }
    writing = !queue_.empty();
  }
  if (deadline_passed) {
    close_with(deadline_passed->first, deadline_passed->second, false);
  }
  const bool close_unanswered = close_sent_ && now - *close_sent_ >= options_.close_timeout;
  const bool write_stalled = writing && now - last_write_progress_ >= options_.write_timeout;
  if (close_unanswered || write_stalled) {
    finished_ = true;  // the client never answered our close, or reads nothing
  } else if (ping_sent_ && now - *ping_sent_ >= options_.pong_timeout) {
    // Silent through a ping and its timeout: a close frame is sent if the
    // socket takes it, and the connection ends without waiting for more.
    fail({close_code::kGoingAway, "no answer to ping"});
    flush(now);
    finished_ = true;
  } else if (!ping_sent_ && now - last_read_ >= options_.ping_interval) {
    MutexLock lock(mu_);
    if (!closing_) {
      ping_due_ = true;
      ping_sent_ = now;
      come_locked();
    }
  }
  refresh_timer();
}

void WebSocketConnection::refresh_timer() {
  Clock::time_point next = last_read_ + options_.ping_interval;
  if (ping_sent_) {
    next = *ping_sent_ + options_.pong_timeout;
  }
  if (close_sent_) {
    next = std::min(next, *close_sent_ + options_.close_timeout);
  }
  MutexLock lock(mu_);
  if (!queue_.empty()) {
    next = std::min(next, last_write_progress_ + options_.write_timeout);
  }
  if (deadline_) {
    next = std::min(next, *deadline_);
  }
  next_timer_ = next;
}

void WebSocketConnection::end() {
  {
    MutexLock lock(mu_);
    if (ended_ && !fd_.valid()) {
      return;
    }
    ended_ = true;
    closing_ = true;
    queue_.clear();
    queued_ = 0;
    pong_.reset();
    close_frame_.reset();
  }
  finished_ = true;
  if (handler_) {
    auto handler = std::move(handler_);
    guarded("on_closed", [&] { handler->on_closed(received_code_); });
  }
  ::shutdown(fd_.get(), SHUT_RDWR);
  fd_.reset();
}

}  // namespace lemon::net::detail
