#include "support/sse_reader.h"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "lemon/core/text.h"
#include "support/loopback_connect.h"

namespace lemon::testing {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "field: value" -> value without the single optional leading space.
std::string field_value(const std::string& line, std::size_t colon) {
  std::string v = line.substr(colon + 1);
  if (!v.empty() && v.front() == ' ') {
    v.erase(0, 1);
  }
  return v;
}

}  // namespace

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

SseStream::SseStream(int port, const std::string& path, const std::string& body)
    : SseStream(port, "POST", path, body, {}) {}

SseStream::SseStream(int port, const std::string& method, const std::string& path,
                     const std::string& body,
                     const std::vector<std::pair<std::string, std::string>>& headers) {
  int fd = connect_loopback(port);
  if (fd < 0) {
    return;
  }
  std::string request = method + " " + path +
                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nAccept: text/event-stream\r\n";
  for (const auto& [name, value] : headers) {
    request += name;
    request += ": ";
    request += value;
    request += "\r\n";
  }
  if (method == "POST") {
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "Connection: close\r\n\r\n" + body;
  std::size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      ::close(fd);
      return;
    }
    sent += static_cast<std::size_t>(n);
  }
  fd_ = fd;
}

SseStream::~SseStream() {
  disconnect();
}

void SseStream::disconnect() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

std::string SseStream::header(const std::string& name) const {
  for (const auto& [k, v] : headers_) {
    if (k == lower(name)) {
      return v;
    }
  }
  return "";
}

bool SseStream::fill(std::chrono::steady_clock::time_point deadline) {
  if (fd_ < 0 || closed_) {
    closed_ = true;
    return false;
  }
  char buf[16384];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      timed_out_ = true;
      return false;
    }
    ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      closed_ = true;
      return false;
    }
    last_recv_ns_ = monotonic_ns();
    raw_.append(buf, static_cast<std::size_t>(got));
    return true;
  }
}

bool SseStream::read_head(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t end;
  while ((end = raw_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) {
      return false;
    }
  }
  std::string head = raw_.substr(0, end);
  raw_.erase(0, end + 4);
  std::size_t line_end = head.find("\r\n");
  std::string status_line = head.substr(0, line_end);
  auto sp = status_line.find(' ');
  status_ = sp == std::string::npos ? 0 : std::atoi(status_line.c_str() + sp + 1);
  std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    std::size_t next = head.find("\r\n", pos);
    std::string line = head.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    pos = next == std::string::npos ? head.size() : next + 2;
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      headers_.emplace_back(lower(std::string(lemon::trim_whitespace(line.substr(0, colon)))),
                            std::string(lemon::trim_whitespace(line.substr(colon + 1))));
    }
  }
  head_done_ = true;
  chunked_ = lower(header("transfer-encoding")).find("chunked") != std::string::npos;
  if (!chunked_ && !header("content-length").empty()) {
    content_left_ = std::atoll(header("content-length").c_str());
  }
  decode();
  split_events();
  return true;
}

void SseStream::decode() {
  if (!head_done_ || ended_) {
    return;
  }
  if (chunked_) {
    for (;;) {
      if (chunk_crlf_) {
        if (raw_.size() < 2) {
          break;
        }
        raw_.erase(0, 2);
        chunk_crlf_ = false;
      }
      if (chunk_left_ > 0) {
        auto take = static_cast<std::size_t>(
            std::min<long long>(chunk_left_, static_cast<long long>(raw_.size())));
        if (take == 0) {
          break;
        }
        body_.append(raw_, 0, take);
        raw_.erase(0, take);
        chunk_left_ -= static_cast<long long>(take);
        chunk_crlf_ = chunk_left_ == 0;
        continue;
      }
      auto eol = raw_.find("\r\n");
      if (eol == std::string::npos) {
        break;
      }
      long long size = std::strtoll(raw_.c_str(), nullptr, 16);
      raw_.erase(0, eol + 2);
      if (size == 0) {
        ended_ = true;
        clean_end_ = true;
        break;
      }
      chunk_left_ = size;
    }
  } else if (content_left_ >= 0) {
    auto take = static_cast<std::size_t>(
        std::min<long long>(content_left_, static_cast<long long>(raw_.size())));
    body_.append(raw_, 0, take);
    raw_.erase(0, take);
    content_left_ -= static_cast<long long>(take);
    if (content_left_ == 0) {
      ended_ = true;
      clean_end_ = true;
    }
  } else {
    body_ += raw_;  // delimited by the connection closing
    raw_.clear();
    if (closed_) {
      ended_ = true;
      clean_end_ = true;
    }
  }
  if (closed_ && !ended_) {
    ended_ = true;  // the connection dropped mid-body
  }
}

void SseStream::split_events() {
  std::size_t end;
  while ((end = body_.find("\n\n")) != std::string::npos) {
    std::string text = body_.substr(0, end);
    body_.erase(0, end + 2);
    SseEvent ev;
    ev.arrival_ns = last_recv_ns_;
    std::size_t pos = 0;
    while (pos <= text.size()) {
      std::size_t nl = text.find('\n', pos);
      std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      if (line.empty()) {
        continue;
      }
      if (line.front() == ':') {
        ev.comments.push_back(field_value(line, 0));
        continue;
      }
      auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      std::string value = colon == std::string::npos ? "" : field_value(line, colon);
      if (name == "data") {
        ev.data += (ev.data.empty() ? "" : "\n") + value;
      } else if (name == "event") {
        ev.event = value;
      } else if (name == "id") {
        ev.id = value;
      }
    }
    events_.push_back(std::move(ev));
  }
}

std::optional<SseEvent> SseStream::next(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  timed_out_ = false;
  for (;;) {
    if (!events_.empty()) {
      SseEvent ev = std::move(events_.front());
      events_.pop_front();
      return ev;
    }
    if (ended_ || !head_done_) {
      return std::nullopt;
    }
    bool got = fill(deadline);
    decode();
    split_events();
    if (!got && events_.empty()) {
      return std::nullopt;
    }
  }
}

std::optional<SseEvent> SseStream::next_data(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (auto ev = next(std::chrono::duration_cast<std::chrono::milliseconds>(
             deadline - std::chrono::steady_clock::now()))) {
    if (!ev->is_comment()) {
      return ev;
    }
  }
  return std::nullopt;
}

std::vector<SseEvent> SseStream::rest(std::chrono::milliseconds timeout) {
  std::vector<SseEvent> out;
  for (auto& ev : rest_with_comments(timeout)) {
    if (!ev.is_comment()) {
      out.push_back(std::move(ev));
    }
  }
  return out;
}

std::vector<SseEvent> SseStream::rest_with_comments(std::chrono::milliseconds timeout) {
  std::vector<SseEvent> out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (auto ev = next(std::chrono::duration_cast<std::chrono::milliseconds>(
             deadline - std::chrono::steady_clock::now()))) {
    out.push_back(std::move(*ev));
  }
  return out;
}

std::string SseStream::read_body(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  timed_out_ = false;
  while (head_done_ && !ended_) {
    bool got = fill(deadline);
    decode();
    if (!got && timed_out_) {
      break;
    }
  }
  return body_;
}

}  // namespace lemon::testing
