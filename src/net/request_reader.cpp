#include "request_reader.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "chunked_decoder.h"
#include "wire_parser.h"

namespace lemon::net::detail {
namespace {

constexpr std::size_t kReadChunk = 64u << 10;

ReadOutcome closed() {
  return ReadOutcome{};
}

ReadOutcome reject(Error error) {
  ReadOutcome out;
  out.kind = ReadOutcome::Kind::kReject;
  out.rejection = std::move(error);
  return out;
}

ReadOutcome reject(ErrorCode code, std::string message) {
  return reject(Error(code, std::move(message)));
}

ReadOutcome too_large(std::size_t limit) {
  return reject(ErrorCode::kPayloadTooLarge,
                "request body exceeds the limit of " + std::to_string(limit) + " bytes");
}

ReadOutcome timed_out(const char* what) {
  return reject(ErrorCode::kRequestTimeout, std::string(what));
}

ReadOutcome memory_full() {
  return reject(Error(ErrorCode::kServerBusy,
                      "server is busy: request bodies use all of --max-request-memory; retry")
                    .with_retry_after(1));
}

// Blank lines (CRLF) tolerated before a request line (RFC 9112 2.2).
constexpr std::size_t kMaxLeadingBlankLines = 4;

// Splits the target into path and query; false when the target as sent, its
// decoded path or its decoded query is not valid UTF-8 (raw bytes and
// percent-escapes can each be half of one character: "/\xc3%a9").
bool split_target(const std::string& target, Request& request) {
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
  return valid_utf8(target) && valid_utf8(request.path) &&
         valid_utf8(url_decode(request.query, true));
}

}  // namespace

bool RequestMemory::try_take(std::size_t n) {
  std::size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (n > limit_ || used > limit_ - n) {
      return false;
    }
  } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
  return true;
}

RequestReader::RequestReader(int fd, const ServerOptions& options, RequestMemory& memory,
                             int stop_fd)
    : fd_(fd), options_(options), memory_(memory), stop_fd_(stop_fd) {}

RequestReader::~RequestReader() {
  memory_.give_back(charged_);
}

RequestReader::Fill RequestReader::fill(Clock::time_point deadline, bool stoppable,
                                        bool try_first) {
  char chunk[16384];
  for (bool wait = !try_first;; wait = true) {
    Wait w = wait ? wait_fd(fd_, POLLIN, millis_until(deadline), stoppable ? stop_fd_ : -1, POLLIN)
                  : Wait::kReady;
    if (w == Wait::kInterrupted && wait_fd(fd_, POLLIN, 0) == Wait::kReady) {
      // Stopping, but a request's first bytes are already here: it has
      // begun, so it is read and answered (503) rather than dropped.
      stoppable = false;
      continue;
    }
    if (w == Wait::kTimeout) {
      return Fill::kTimeout;
    }
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

bool RequestReader::charge_and_append(Request& request, std::string_view data) {
  if (!memory_.try_take(data.size())) {
    return false;
  }
  charged_ += data.size();
  request.body.append(data);
  last_progress_ = Clock::now();
  return true;
}

Clock::time_point RequestReader::body_deadline(std::size_t received) const {
  auto deadline = last_progress_ + options_.body_idle_timeout;
  if (options_.body_min_rate > 0) {
    // The time by which `received + 1` bytes are due at the minimum rate.
    auto due = body_start_ + options_.body_rate_grace +
               std::chrono::milliseconds((received + 1) * 1000 / options_.body_min_rate);
    deadline = std::min(deadline, std::max(due, body_start_ + options_.body_rate_grace));
  }
  return deadline;
}

ReadOutcome RequestReader::read(Request& request) {
  memory_.give_back(charged_);
  charged_ = 0;
  // The head: at most a few blank lines before the request line (RFC 9112
  // 2.2), then everything up to the empty line that ends the header section.
  // Waiting for a request's first byte uses keep_alive_timeout; from then on
  // the whole head must arrive within header_timeout.
  std::size_t scanned = 0;
  std::size_t cr_scanned = 0;  // bytes searched for a bare CR
  std::size_t blank_lines = 0;
  std::size_t head_end = std::string::npos;
  std::optional<Clock::time_point> head_deadline;
  for (;;) {
    while (buf_.starts_with("\r\n")) {
      if (++blank_lines > kMaxLeadingBlankLines) {
        return reject(ErrorCode::kInvalidRequest, "malformed request: too many blank lines");
      }
      buf_.erase(0, 2);
      scanned = 0;
      cr_scanned = 0;
    }
    if (buf_.starts_with("\n")) {
      return reject(ErrorCode::kInvalidRequest, "malformed request: bare LF");
    }
    head_end = buf_ == "\r" ? std::string::npos : wire::find_head_end(buf_, scanned);
    if (head_end != std::string::npos) {
      break;
    }
    scanned = buf_.size() >= 3 ? buf_.size() - 3 : 0;
    // A bare CR could keep the head from ever ending: refused at once.
    if (wire::has_bare_cr(buf_, cr_scanned)) {
      return reject(ErrorCode::kInvalidRequest, "malformed request: bare CR");
    }
    cr_scanned = buf_.empty() ? 0 : buf_.size() - 1;
    auto lf = buf_.find('\n');
    if (lf == std::string::npos ? buf_.size() > wire::kMaxRequestLine + 1
                                : lf > wire::kMaxRequestLine + 1) {
      return reject(ErrorCode::kUriTooLong, "request line is too long");
    }
    if (lf != std::string::npos && buf_.size() - lf - 1 > options_.max_header_bytes) {
      return reject(
          ErrorCode::kHeadersTooLarge,
          "request headers exceed " + std::to_string(options_.max_header_bytes) + " bytes");
    }
    if ((!buf_.empty() || blank_lines > 0) && !head_deadline) {
      head_deadline = Clock::now() + options_.header_timeout;
    }
    auto deadline = head_deadline ? *head_deadline : Clock::now() + options_.keep_alive_timeout;
    // A stop interrupts only the wait for a next request; one that has begun
    // is read to its end (within its deadlines) and answered 503.
    const bool first_byte = !head_deadline;
    switch (fill(deadline, /*stoppable=*/first_byte, /*try_first=*/first_byte && buf_.empty())) {
      case Fill::kData:
        continue;
      case Fill::kTimeout:
        if (head_deadline) {
          return timed_out("request headers were not complete in time");
        }
        return closed();
      case Fill::kEof:
      case Fill::kStopped:
        return closed();
    }
  }
  const auto lf = buf_.find('\n');
  if (lf > wire::kMaxRequestLine + 1) {
    return reject(ErrorCode::kUriTooLong, "request line is too long");
  }
  if (head_end - lf - 1 > options_.max_header_bytes) {
    return reject(ErrorCode::kHeadersTooLarge,
                  "request headers exceed " + std::to_string(options_.max_header_bytes) + " bytes");
  }

  wire::RequestHead head;
  std::string why;
  switch (wire::parse_request_head(std::string_view(buf_).substr(0, head_end), head, why)) {
    case wire::HeadError::kNone:
      break;
    case wire::HeadError::kUriTooLong:
      return reject(ErrorCode::kUriTooLong, "request line is too long");
    case wire::HeadError::kTooManyFields:
      return reject(ErrorCode::kHeadersTooLarge, "request has " + why);
    case wire::HeadError::kMalformed:
      return reject(ErrorCode::kInvalidRequest, "malformed request: " + why);
    case wire::HeadError::kNotImplemented:
      return reject(ErrorCode::kNotImplemented, why);
    case wire::HeadError::kVersionNotSupported:
      return reject(ErrorCode::kVersionNotSupported, why);
  }
  buf_.erase(0, head_end);
  for (const auto& [name, value] : head.headers.fields()) {
    if (!valid_utf8(value)) {
      return reject(ErrorCode::kInvalidRequest,
                    "malformed request: header field " + name + " is not valid UTF-8");
    }
  }

  ReadOutcome out;
  out.kind = ReadOutcome::Kind::kRequest;
  out.http10 = head.minor_version == 0;
  out.keep_alive = out.http10 ? wire::has_token(head.headers, "Connection", "keep-alive")
                              : !wire::has_token(head.headers, "Connection", "close");
  out.head_request = head.method == "HEAD";
  // From here on an outcome knows the method: a refused HEAD gets no body.
  auto known = [&out](ReadOutcome r) {
    r.head_request = out.head_request;
    return r;
  };

  const auto coding = wire::transfer_coding(head.headers);
  std::uint64_t length = 0;
  const auto length_field = wire::content_length(head.headers, length);
  if (coding != wire::TransferCoding::kNone && length_field != wire::LengthField::kAbsent) {
    return known(reject(ErrorCode::kInvalidRequest,
                        "malformed request: both Transfer-Encoding and Content-Length"));
  }
  if (coding == wire::TransferCoding::kOther) {
    return known(reject(ErrorCode::kInvalidRequest,
                        "malformed request: Transfer-Encoding does not end with one chunked"));
  }
  if (coding == wire::TransferCoding::kUnsupported) {
    return known(reject(ErrorCode::kNotImplemented,
                        "transfer codings other than chunked are not implemented"));
  }
  if (coding != wire::TransferCoding::kNone && out.http10) {
    // RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
    // framing; it is served, and the connection closed after it.
    out.keep_alive = false;
  }
  if (length_field == wire::LengthField::kInvalid) {
    return known(reject(ErrorCode::kInvalidRequest,
                        "malformed request: invalid or repeated Content-Length"));
  }

  request.method = std::move(head.method);
  request.target = std::move(head.target);
  if (!split_target(request.target, request)) {
    return known(reject(ErrorCode::kInvalidRequest,
                        "malformed request: the request target is not valid UTF-8"));
  }
  request.headers = std::move(head.headers);
  request.http10 = out.http10;
  request.context.reset();
  request.body.clear();
  request.body.shrink_to_fit();

  // The route and the API key are checked before any of the body is read.
  if (options_.head_check) {
    if (auto answer = options_.head_check(request)) {
      ReadOutcome early;
      early.kind = ReadOutcome::Kind::kAnswer;
      early.answer = std::move(*answer);
      early.head_request = out.head_request;
      return early;
    }
  }
  if (length > options_.max_body_bytes) {
    return known(too_large(options_.max_body_bytes));
  }
  const bool chunked = coding == wire::TransferCoding::kChunked;
  auto expect = request.headers.get("Expect");
  const bool expect_continue = !out.http10 && expect && iequals(*expect, "100-continue") &&
                               (chunked ? buf_.empty() : buf_.size() < length);

  body_start_ = Clock::now();
  last_progress_ = body_start_;
  if (expect_continue) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    if (send_all(fd_, kContinue, Clock::now() + options_.write_timeout) != 0) {
      return closed();
    }
  }
  return known(chunked ? read_chunked(request, out) : read_length(request, length, out));
}

ReadOutcome RequestReader::read_length(Request& request, std::uint64_t length, ReadOutcome& out) {
  const auto want = static_cast<std::size_t>(length);
  const std::size_t take = std::min(want, buf_.size());
  if (!charge_and_append(request, std::string_view(buf_).substr(0, take))) {
    return memory_full();
  }
  buf_.erase(0, take);
  char chunk[kReadChunk];
  while (request.body.size() < want) {
    Wait w = wait_fd(fd_, POLLIN, millis_until(body_deadline(request.body.size())));
    if (w == Wait::kTimeout) {
      return timed_out("request body arrived too slowly");
    }
    if (w != Wait::kReady) {
      return closed();
    }
    ssize_t n =
        ::recv(fd_, chunk, std::min(sizeof chunk, want - request.body.size()), MSG_DONTWAIT);
    if (n > 0) {
      if (!charge_and_append(request, std::string_view(chunk, static_cast<std::size_t>(n)))) {
        return memory_full();
      }
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
        if (!charge_and_append(request, piece)) {
          return memory_full();
        }
        continue;
      }
      if (step == wire::ChunkedDecoder::Step::kDone) {
        buf_.erase(0, buf_.size() - in.size());
        return out;
      }
      if (step == wire::ChunkedDecoder::Step::kError) {
        return reject(ErrorCode::kInvalidRequest,
                      std::string("malformed request: ") + decoder.error());
      }
      if (step == wire::ChunkedDecoder::Step::kTooLarge) {
        return too_large(options_.max_body_bytes);
      }
      break;  // kNeedMore
    }
    buf_.clear();
    switch (fill(body_deadline(request.body.size()), /*stoppable=*/false)) {
      case Fill::kData:
        last_progress_ = Clock::now();
        break;
      case Fill::kTimeout:
        return timed_out("request body arrived too slowly");
      case Fill::kEof:
      case Fill::kStopped:
        return closed();
    }
  }
}

}  // namespace lemon::net::detail
