#include "response_writer.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <utility>

#include "io.h"
#include "lemon/core/error_envelope.h"
#include "lemon/core/log.h"
#include "websocket_loop.h"
#include "wire_parser.h"

namespace lemon::net::detail {
namespace {

bool safe_field(std::string_view s) {
  return s.find_first_of("\r\n") == std::string_view::npos && !s.empty();
}

bool status_has_body(int status) {
  return !(status < 200 || status == 204 || status == 304);
}

// "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n" for now (RFC 9110 6.6.1,
// 5.6.7), made once a second per thread.
std::string_view date_field() {
  struct Cached {
    std::time_t second = -1;
    char text[48] = {};
    std::size_t size = 0;
  };
  thread_local Cached cached;
  const std::time_t now = std::time(nullptr);
  if (now != cached.second) {
    static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::tm tm{};
    gmtime_r(&now, &tm);
    const int n = std::snprintf(cached.text, sizeof cached.text,
                                "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n", kDays[tm.tm_wday],
                                tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
                                tm.tm_min, tm.tm_sec);
    cached.size = n > 0 ? static_cast<std::size_t>(n) : 0;
    cached.second = now;
  }
  return {cached.text, cached.size};
}

}  // namespace

SocketResponseWriter::SocketResponseWriter(int fd, ResponseMode mode,
                                           const std::atomic<bool>* stopping,
                                           std::chrono::milliseconds write_timeout)
    : fd_(fd),
      mode_(mode),
      write_timeout_(write_timeout),
      stopping_(stopping),
      keep_alive_(mode.keep_alive) {}

std::string SocketResponseWriter::build_head(int status, const Headers& headers,
                                             std::optional<std::size_t> content_length,
                                             bool chunked) {
  if (stopping_ != nullptr && stopping_->load(std::memory_order_relaxed)) {
    keep_alive_ = false;
  }
  if (wire::has_token(headers, "Connection", "close")) {
    keep_alive_ = false;
  }
  std::string head;
  head.reserve(256);
  head += "HTTP/1.1 ";
  head += std::to_string(status);
  head += ' ';
  head += status_reason(status);
  head += "\r\n";
  bool has_server = false;
  bool has_date = false;
  for (const auto& [name, value] : headers.fields()) {
    if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") ||
        iequals(name, "Connection")) {
      continue;
    }
    if (!safe_field(name) || value.find_first_of("\r\n") != std::string::npos) {
      logger("http")->warn("dropping response header with CR/LF: {}", name);
      continue;
    }
    has_server = has_server || iequals(name, "Server");
    has_date = has_date || iequals(name, "Date");
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  if (!has_server) {
    head += "Server: lemonade-router\r\n";
  }
  if (!has_date) {
    head += date_field();
  }
  if (content_length) {
    head += "Content-Length: ";
    head += std::to_string(*content_length);
    head += "\r\n";
  }
  if (chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  if (!keep_alive_) {
    head += "Connection: close\r\n";
  } else if (mode_.http10) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";
  return head;
}

bool SocketResponseWriter::write(iovec* iov, int count) {
  int err = send_all_progressing(fd_, iov, count, write_timeout_);
  if (err != 0) {
    logger("http")->debug("write to client failed: {}", errno_text(err));
    state_ = State::kFailed;
    return false;
  }
  return true;
}

bool SocketResponseWriter::upgrade_to_websocket(std::string_view accept, const Headers& headers,
                                                std::shared_ptr<WebSocketHandler> handler,
                                                std::size_t max_message) {
  if (state_ != State::kIdle || upgrade_loop_ == nullptr || remote_addr_ == nullptr || !handler ||
      mode_.http10) {
    return false;
  }
  if (!upgrade_loop_->reserve(*remote_addr_)) {
    return false;
  }
  std::string head =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: ";
  head += accept;
  head += "\r\n";
  for (const auto& [name, value] : headers.fields()) {
    if (safe_field(name) && value.find_first_of("\r\n") == std::string::npos) {
      head += name;
      head += ": ";
      head += value;
      head += "\r\n";
    }
  }
  head += "Server: lemonade-router\r\n";
  head += date_field();
  head += "\r\n";
  iovec iov{head.data(), head.size()};
  if (!write(&iov, 1)) {
    upgrade_loop_->unreserve(*remote_addr_);
    return true;  // the client is gone; nothing more can be written
  }
  state_ = State::kUpgraded;
  keep_alive_ = false;
  upgrade_ = Upgrade{std::move(handler), max_message};
  return true;
}

bool SocketResponseWriter::send(int status, const Headers& headers, std::string_view body) {
  if (state_ != State::kIdle) {
    if (state_ != State::kFailed) {
      logger("http")->error("response already started; send({}) ignored", status);
    }
    return false;
  }
  const bool body_allowed = status_has_body(status);
  std::optional<std::size_t> length;
  if (body_allowed) {
    length = body.size();
  }
  std::string head = build_head(status, headers, length, false);
  const bool write_body = body_allowed && !mode_.head_request && !body.empty();
  iovec iov[2] = {{head.data(), head.size()},
                  {const_cast<char*>(body.data()), write_body ? body.size() : 0}};
  if (!last_write(iov, 2)) {
    return false;
  }
  state_ = State::kDone;
  return true;
}

bool SocketResponseWriter::begin_chunked(int status, const Headers& headers) {
  if (state_ != State::kIdle) {
    if (state_ != State::kFailed) {
      logger("http")->error("response already started; begin_chunked({}) ignored", status);
    }
    return false;
  }
  no_body_ = mode_.head_request || !status_has_body(status);
  if (mode_.http10 && !no_body_) {
    // HTTP/1.0 has no chunked coding: stream plain bytes and close to end.
    raw_stream_ = true;
    keep_alive_ = false;
  }
  std::string head =
      build_head(status, headers, std::nullopt, !raw_stream_ && status_has_body(status));
  iovec iov{head.data(), head.size()};
  if (!write(&iov, 1)) {
    return false;
  }
  event_stream_ = headers.media_type() == "text/event-stream";
  state_ = State::kChunked;
  return true;
}

bool SocketResponseWriter::write_chunk(std::string_view data) {
  if (state_ != State::kChunked) {
    return false;
  }
  if (data.empty() || no_body_) {
    return true;
  }
  remember_tail(data);
  if (raw_stream_) {
    iovec iov{const_cast<char*>(data.data()), data.size()};
    return write(&iov, 1);
  }
  char size_line[24];
  int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  char crlf[] = "\r\n";
  iovec iov[3] = {{size_line, static_cast<std::size_t>(n)},
                  {const_cast<char*>(data.data()), data.size()},
                  {crlf, 2}};
  return write(iov, 3);
}

bool SocketResponseWriter::finish() {
  if (state_ == State::kDone) {
    return true;
  }
  if (state_ != State::kChunked) {
    return false;
  }
  char last[] = "0\r\n\r\n";
  iovec iov{last, 5};
  if (!last_write(&iov, no_body_ || raw_stream_ ? 0 : 1)) {
    return false;
  }
  state_ = State::kDone;
  return true;
}

bool SocketResponseWriter::last_write(iovec* iov, int count) {
  EndListener* listener = std::exchange(end_listener_, nullptr);
  if (listener != nullptr) {
    listener->last_write_begins();
  }
  const bool written = count == 0 || write(iov, count);
  if (listener != nullptr) {
    listener->last_write_done();
  }
  return written;
}

void SocketResponseWriter::remember_tail(std::string_view data) {
  if (data.size() >= kTailSize) {
    tail_.assign(data.substr(data.size() - kTailSize));
  } else {
    tail_.append(data);
    if (tail_.size() > kTailSize) {
      tail_.erase(0, tail_.size() - kTailSize);
    }
  }
}

bool SocketResponseWriter::at_event_boundary() const {
  // An SSE event ends with a blank line: LF LF, CRLF CRLF or CR CR.
  const std::string_view t = tail_;
  return t.empty() || t.ends_with("\n\n") || t.ends_with("\r\n\r\n") || t.ends_with("\r\r");
}

bool SocketResponseWriter::keep_serving_half_closed() {
  if (half_closed_) {
    return true;
  }
  if (state_ == State::kFailed || mode_.http10) {
    return false;
  }
  if (state_ == State::kIdle) {
    // Nothing sent yet: an interim response is allowed before any final one.
    static constexpr std::string_view kProbe = "HTTP/1.1 100 Continue\r\n\r\n";
    iovec iov{const_cast<char*>(kProbe.data()), kProbe.size()};
    if (!write(&iov, 1)) {
      return false;
    }
  } else if (state_ == State::kChunked && event_stream_ && !no_body_) {
    // Mid-stream: an SSE comment between two events is ignored by every
    // client. Inside an event nothing may be added; the next write tells.
    if (at_event_boundary() && !write_chunk(": \n\n")) {
      return false;
    }
  } else {
    return false;  // any other body cannot take a probe: treat as gone
  }
  half_closed_ = true;
  return true;
}

bool SocketResponseWriter::client_connected() {
  if (state_ == State::kFailed || fd_ < 0) {
    return false;
  }
  // After a half-close only a reset or a full close counts (POLLHUP/POLLERR
  // are reported whatever the events asked for).
  pollfd p{fd_, static_cast<short>(half_closed_ ? 0 : (POLLIN | POLLRDHUP)), 0};
  if (::poll(&p, 1, 0) <= 0) {
    return true;
  }
  if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
    return false;
  }
  if ((p.revents & POLLRDHUP) != 0) {
    return keep_serving_half_closed();
  }
  if ((p.revents & POLLIN) != 0) {
    char c;
    ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
      return keep_serving_half_closed();
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return false;
    }
  }
  return true;
}

bool SocketResponseWriter::send_error(const Error& error) {
  Headers headers{{"Content-Type", "application/json"}};
  if (auto seconds = error.retry_after(); seconds && *seconds > 0) {
    headers.add("Retry-After", std::to_string(*seconds));
  }
  return send(error_status(error), headers, error_envelope(error));
}

}  // namespace lemon::net::detail
