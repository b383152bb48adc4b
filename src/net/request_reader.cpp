#include "request_reader.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "wire_parser.h"

namespace lemon::net::detail {
namespace {

constexpr std::size_t kReadChunk = 64u << 10;

ReadOutcome closed() {
  return ReadOutcome{};
}

ReadOutcome reject(int status, std::string code, std::string message) {
  ReadOutcome out;
  out.kind = ReadOutcome::Kind::kReject;
  out.status = status;
  out.code = std::move(code);
  out.message = std::move(message);
  return out;
}

ReadOutcome too_large(std::size_t limit) {
  return reject(413, "payload_too_large",
                "request body exceeds the limit of " + std::to_string(limit) + " bytes");
}

void split_target(const std::string& target, Request& request) {
  std::string_view rest = target;
  if (rest.starts_with("http://") || rest.starts_with("https://")) {
    rest.remove_prefix(rest.find("//") + 2);
    auto slash = rest.find_first_of("/?");
    rest = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
  }
  auto q = rest.find('?');
  std::string_view raw_path = rest.substr(0, q);
  request.path = raw_path.empty() ? std::string("/") : url_decode(raw_path, false);
  request.query = q == std::string_view::npos ? std::string() : std::string(rest.substr(q + 1));
}

}  // namespace

RequestReader::RequestReader(int fd, const ServerOptions& options, int stop_fd)
    : fd_(fd), options_(options), stop_fd_(stop_fd) {}

RequestReader::Fill RequestReader::fill(Clock::time_point deadline) {
  char chunk[16384];
  for (;;) {
    Wait w = wait_fd(fd_, POLLIN, millis_until(deadline), stop_fd_, POLLIN);
    if (w != Wait::kReady) {
      return Fill::kStopped;
    }
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      buf_.append(chunk, static_cast<std::size_t>(n));
      return Fill::kData;
    }
    if (n == 0) {
      return Fill::kEof;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return Fill::kEof;
    }
  }
}

ReadOutcome RequestReader::read(Request& request) {
  // The head: skip empty lines before the request line (RFC 9112 2.2), then
  // read until the empty line that ends the header section.
  // Waiting for a request uses keep_alive_timeout; once its first byte is in,
  // the whole head must arrive within read_timeout (no slow-drip heads).
  std::size_t scanned = 0;
  std::size_t head_end = std::string::npos;
  std::optional<Clock::time_point> head_deadline;
  for (;;) {
    std::size_t skip = 0;
    while (skip < buf_.size() && (buf_[skip] == '\r' || buf_[skip] == '\n')) {
      ++skip;
    }
    if (skip > 0) {
      buf_.erase(0, skip);
      scanned = 0;
    }
    head_end = wire::find_head_end(buf_, scanned);
    if (head_end != std::string::npos) {
      break;
    }
    scanned = buf_.size() >= 3 ? buf_.size() - 3 : 0;
    auto lf = buf_.find('\n');
    if (lf == std::string::npos ? buf_.size() > wire::kMaxRequestLine
                                : lf > wire::kMaxRequestLine) {
      return reject(414, "uri_too_long", "request target is too long");
    }
    if (lf != std::string::npos && buf_.size() - lf - 1 > options_.max_header_bytes) {
      return reject(
          431, "headers_too_large",
          "request headers exceed " + std::to_string(options_.max_header_bytes) + " bytes");
    }
    if (!buf_.empty() && !head_deadline) {
      head_deadline = Clock::now() + options_.read_timeout;
    }
    auto deadline = head_deadline ? *head_deadline : Clock::now() + options_.keep_alive_timeout;
    if (fill(deadline) != Fill::kData) {
      return closed();
    }
  }
  const auto lf = buf_.find('\n');
  if (lf > wire::kMaxRequestLine) {
    return reject(414, "uri_too_long", "request target is too long");
  }
  if (head_end - lf - 1 > options_.max_header_bytes) {
    return reject(431, "headers_too_large",
                  "request headers exceed " + std::to_string(options_.max_header_bytes) + " bytes");
  }

  wire::RequestHead head;
  std::string why;
  switch (wire::parse_request_head(std::string_view(buf_).substr(0, head_end), head, why)) {
    case wire::HeadError::kNone:
      break;
    case wire::HeadError::kUriTooLong:
      return reject(414, "uri_too_long", "request target is too long");
    case wire::HeadError::kMalformed:
      return reject(400, "invalid_request_error", "malformed request: " + why);
  }
  buf_.erase(0, head_end);

  ReadOutcome out;
  out.kind = ReadOutcome::Kind::kRequest;
  out.http10 = head.minor_version == 0;
  out.keep_alive = out.http10 ? wire::has_token(head.headers, "Connection", "keep-alive")
                              : !wire::has_token(head.headers, "Connection", "close");
  out.head_request = head.method == "HEAD";

  const auto coding = wire::transfer_coding(head.headers);
  std::uint64_t length = 0;
  const auto length_field = wire::content_length(head.headers, length);
  if (coding != wire::TransferCoding::kNone && length_field != wire::LengthField::kAbsent) {
    return reject(400, "invalid_request_error",
                  "malformed request: both Transfer-Encoding and Content-Length");
  }
  if (coding == wire::TransferCoding::kOther) {
    return reject(400, "invalid_request_error", "malformed request: unsupported Transfer-Encoding");
  }
  if (length_field == wire::LengthField::kInvalid) {
    return reject(400, "invalid_request_error", "malformed request: invalid Content-Length");
  }
  if (length > options_.max_body_bytes) {
    return too_large(options_.max_body_bytes);
  }
  const bool chunked = coding == wire::TransferCoding::kChunked;
  auto expect = head.headers.get("Expect");
  const bool expect_continue = !out.http10 && expect && iequals(*expect, "100-continue") &&
                               (chunked ? buf_.empty() : buf_.size() < length);

  request.method = std::move(head.method);
  request.target = std::move(head.target);
  split_target(request.target, request);
  request.headers = std::move(head.headers);
  request.body.clear();

  if (expect_continue) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    if (send_all(fd_, kContinue, Clock::now() + options_.read_timeout) != 0) {
      return closed();
    }
  }
  if (chunked) {
    return read_chunked(request, out);
  }
  return read_length(request, length, out);
}

ReadOutcome RequestReader::read_length(Request& request, std::uint64_t length, ReadOutcome& out) {
  const auto want = static_cast<std::size_t>(length);
  const std::size_t take = std::min(want, buf_.size());
  request.body.assign(buf_, 0, take);
  buf_.erase(0, take);
  if (request.body.size() < want) {
    request.body.reserve(want);
  }
  char chunk[kReadChunk];
  while (request.body.size() < want) {
    Wait w =
        wait_fd(fd_, POLLIN, millis_until(Clock::now() + options_.read_timeout), stop_fd_, POLLIN);
    if (w != Wait::kReady) {
      return closed();
    }
    ssize_t n =
        ::recv(fd_, chunk, std::min(sizeof chunk, want - request.body.size()), MSG_DONTWAIT);
    if (n > 0) {
      request.body.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return closed();
    }
  }
  return out;
}

ReadOutcome RequestReader::read_chunked(Request& request, ReadOutcome& out) {
  wire::ChunkedDecoder decoder(options_.max_body_bytes);
  for (;;) {
    std::string_view in = buf_;
    std::string_view piece;
    for (;;) {
      auto step = decoder.next(in, piece);
      if (step == wire::ChunkedDecoder::Step::kData) {
        request.body.append(piece);
        continue;
      }
      if (step == wire::ChunkedDecoder::Step::kDone) {
        buf_.erase(0, buf_.size() - in.size());
        return out;
      }
      if (step == wire::ChunkedDecoder::Step::kError) {
        return reject(400, "invalid_request_error",
                      std::string("malformed request: ") + decoder.error());
      }
      if (step == wire::ChunkedDecoder::Step::kTooLarge) {
        return too_large(options_.max_body_bytes);
      }
      break;  // kNeedMore
    }
    buf_.clear();
    if (fill(Clock::now() + options_.read_timeout) != Fill::kData) {
      return closed();
    }
  }
}

}  // namespace lemon::net::detail
