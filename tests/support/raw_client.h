// RawClient: a blocking loopback client whose every byte the test controls,
// for server tests that must see the exact bytes on the wire (pipelining,
// partial heads, trickled bodies, half-closes). Reads are guarded by a 10 s
// timeout against hangs, never used to synchronize.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace lemon::testing {

inline constexpr int kRawIoTimeoutMs = 10000;  // guard against hangs, never a sync mechanism

class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  // Takes over an already connected socket.
  struct Adopt {
    int fd;
  };
  explicit RawClient(Adopt socket) : fd_(socket.fd), connected_(socket.fd >= 0) {}
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  // Closes the sending side only (a half-close): the response can still come.
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  void close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  bool send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Reads more bytes into the buffer; false on EOF, error or timeout.
  bool fill() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, kRawIoTimeoutMs) <= 0) {
      return false;
    }
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  // Everything up to and including `marker` (consumed), or "" on failure.
  std::string read_until(std::string_view marker) {
    for (;;) {
      auto pos = buf_.find(marker);
      if (pos != std::string::npos) {
        std::string out = buf_.substr(0, pos + marker.size());
        buf_.erase(0, pos + marker.size());
        return out;
      }
      if (!fill()) {
        return {};
      }
    }
  }

  struct Response {
    int status = 0;
    std::string head;
    std::string body;
  };

  // One response framed by Content-Length or chunked (the raw chunked wire
  // bytes are returned as body), or no body for HEAD.
  Response read_response(bool head_request = false) {
    Response r;
    r.head = read_until("\r\n\r\n");
    if (r.head.size() < 12) {
      return r;
    }
    r.status = std::stoi(r.head.substr(9, 3));
    if (head_request) {
      return r;
    }
    if (header(r.head, "transfer-encoding") == "chunked") {
      r.body = read_until("\r\n0\r\n\r\n");
      return r;
    }
    std::string length = header(r.head, "content-length");
    std::size_t n = length.empty() ? 0 : std::stoul(length);
    while (buf_.size() < n && fill()) {
    }
    r.body = buf_.substr(0, n);
    buf_.erase(0, std::min(n, buf_.size()));
    return r;
  }

  // Reads until the server closes; true if it did (rather than timing out).
  bool read_to_eof(std::string* out = nullptr) {
    while (fill()) {
    }
    if (out != nullptr) {
      *out = buf_;
    }
    buf_.clear();
    return eof_;
  }

  const std::string& buffered() const { return buf_; }

  // Exactly `n` bytes (consumed), or what came before EOF or the timeout.
  std::string take(std::size_t n) {
    while (buf_.size() < n && fill()) {
    }
    std::string out = buf_.substr(0, std::min(n, buf_.size()));
    buf_.erase(0, out.size());
    return out;
  }
  bool eof() const { return eof_; }

  // Lower-cased header lookup in a raw head.
  static std::string header(const std::string& head, std::string name) {
    std::string lower = head;
    for (auto& c : lower) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    auto pos = lower.find("\r\n" + name + ":");
    if (pos == std::string::npos) {
      return {};
    }
    pos += name.size() + 3;
    auto end = lower.find("\r\n", pos);
    std::string value = head.substr(pos, end - pos);
    while (!value.empty() && value.front() == ' ') {
      value.erase(0, 1);
    }
    return value;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buf_;
};

}  // namespace lemon::testing
