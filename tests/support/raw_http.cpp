#include "support/raw_http.h"

#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lemon/core/text.h"
#include "support/loopback_connect.h"

namespace lemon::testing {
namespace {

using Clock = std::chrono::steady_clock;

int millis_left(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<long long>(0, left));
}

bool has_header(const HeaderList& headers, const char* name) {
  for (const auto& [k, v] : headers) {
    if (::strcasecmp(k.c_str(), name) == 0) {
      return true;
    }
  }
  return false;
}

// Decodes a chunked body; false if it is incomplete or malformed.
bool decode_chunked(const std::string& in, std::string& out) {
  std::size_t pos = 0;
  for (;;) {
    auto eol = in.find("\r\n", pos);
    if (eol == std::string::npos) {
      return false;
    }
    char* end = nullptr;
    unsigned long long size = std::strtoull(in.c_str() + pos, &end, 16);
    if (end == in.c_str() + pos) {
      return false;
    }
    pos = eol + 2;
    if (size == 0) {
      return true;
    }
    if (in.size() < pos + size + 2) {
      return false;
    }
    out.append(in, pos, size);
    pos += size + 2;
  }
}

}  // namespace

std::string raw_request_text(int port, const std::string& method, const std::string& path,
                             const HeaderList& headers, const std::string& body) {
  std::string text = method + " " + path + " HTTP/1.1\r\n";
  if (!has_header(headers, "Host")) {
    text += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  }
  for (const auto& [k, v] : headers) {
    text += k;
    text += ": ";
    text += v;
    text += "\r\n";
  }
  text += "Connection: close\r\n";
  const bool bodiless_method = method == "GET" || method == "HEAD" || method == "OPTIONS";
  if (!has_header(headers, "Transfer-Encoding") && !(body.empty() && bodiless_method)) {
    text += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  text += "\r\n";
  text += body;
  return text;
}

std::string chunked_body(const std::string& body, std::size_t chunk_size) {
  std::string out;
  char size_line[32];
  for (std::size_t pos = 0; pos < body.size(); pos += chunk_size) {
    std::size_t n = std::min(chunk_size, body.size() - pos);
    std::snprintf(size_line, sizeof size_line, "%zx\r\n", n);
    out += size_line;
    out.append(body, pos, n);
    out += "\r\n";
  }
  out += "0\r\n\r\n";
  return out;
}

HttpReply raw_exchange(int port, const std::string& request, std::chrono::milliseconds timeout) {
  HttpReply reply;
  const auto deadline = Clock::now() + timeout;
  int fd = connect_loopback(port);
  if (fd < 0) {
    reply.error = std::string("connect: ") + std::strerror(errno);
    return reply;
  }
  std::size_t sent = 0;
  bool answered_early = false;
  while (sent < request.size()) {
    pollfd p{fd, POLLIN | POLLOUT, 0};
    int n = ::poll(&p, 1, millis_left(deadline));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      reply.error = "timed out sending the request";
      ::close(fd);
      return reply;
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      answered_early = true;
      break;
    }
    ssize_t got =
        ::send(fd, request.data() + sent, std::min<std::size_t>(request.size() - sent, 65536),
               MSG_NOSIGNAL | MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
      continue;
    }
    if (got < 0) {
      answered_early = true;  // EPIPE/ECONNRESET: read what the server said
      break;
    }
    sent += static_cast<std::size_t>(got);
  }
  if (answered_early) {
    ::shutdown(fd, SHUT_WR);
  }
  std::string raw;
  char buf[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, millis_left(deadline));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      reply.error = "timed out reading the response";
      break;
    }
    ssize_t got = ::recv(fd, buf, sizeof buf, 0);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    raw.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fd);

  auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    if (reply.error.empty()) {
      reply.error = "connection closed before a complete response head (" +
                    std::to_string(raw.size()) + " bytes)";
    }
    return reply;
  }
  std::string head = raw.substr(0, head_end);
  std::string body = raw.substr(head_end + 4);
  auto line_end = head.find("\r\n");
  std::string status_line = head.substr(0, line_end);
  auto sp = status_line.find(' ');
  reply.status = sp == std::string::npos ? 0 : std::atoi(status_line.c_str() + sp + 1);
  std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    auto next = head.find("\r\n", pos);
    std::string line = head.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    pos = next == std::string::npos ? head.size() : next + 2;
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      reply.headers.emplace_back(std::string(lemon::trim_whitespace(line.substr(0, colon))),
                                 std::string(lemon::trim_whitespace(line.substr(colon + 1))));
    }
  }
  if (reply.header("Transfer-Encoding").find("chunked") != std::string::npos) {
    if (!decode_chunked(body, reply.body)) {
      reply.error = "incomplete chunked body";
    }
  } else if (reply.has_header("Content-Length")) {
    auto length = static_cast<std::size_t>(std::atoll(reply.header("Content-Length").c_str()));
    if (body.size() < length) {
      reply.error = "body shorter than Content-Length";
    }
    reply.body = body.substr(0, length);
  } else {
    reply.body = body;
  }
  return reply;
}

HttpReply raw_request(int port, const std::string& method, const std::string& path,
                      const HeaderList& headers, const std::string& body) {
  return raw_exchange(port, raw_request_text(port, method, path, headers, body));
}

FormPart form_field(const std::string& name, const std::string& value) {
  return FormPart{name, value, "", ""};
}

FormPart form_file(const std::string& name, const std::string& data, const std::string& filename,
                   const std::string& content_type) {
  return FormPart{name, data, filename, content_type};
}

std::string multipart_body(const std::vector<FormPart>& parts, const std::string& boundary) {
  std::string out;
  for (const auto& part : parts) {
    out += "--" + boundary + "\r\n";
    out += "Content-Disposition: form-data; name=\"" + part.name + "\"";
    if (!part.filename.empty()) {
      out += "; filename=\"" + part.filename + "\"";
    }
    out += "\r\n";
    if (!part.content_type.empty()) {
      out += "Content-Type: " + part.content_type + "\r\n";
    }
    out += "\r\n";
    out += part.data;
    out += "\r\n";
  }
  out += "--" + boundary + "--\r\n";
  return out;
}

std::string multipart_content_type(const std::string& boundary) {
  return "multipart/form-data; boundary=" + boundary;
}

std::string wav_bytes(std::size_t samples) {
  const auto data_size = static_cast<std::uint32_t>(samples * 2);
  std::string out;
  auto u32 = [&out](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      out += static_cast<char>((v >> (8 * i)) & 0xff);
    }
  };
  auto u16 = [&out](std::uint16_t v) {
    out += static_cast<char>(v & 0xff);
    out += static_cast<char>((v >> 8) & 0xff);
  };
  out += "RIFF";
  u32(36 + data_size);
  out += "WAVEfmt ";
  u32(16);
  u16(1);  // PCM
  u16(1);  // mono
  u32(16000);
  u32(32000);  // byte rate
  u16(2);      // block align
  u16(16);     // bits per sample
  out += "data";
  u32(data_size);
  out.append(data_size, '\0');
  return out;
}

}  // namespace lemon::testing
