#include "upstream_exchange.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "chunked_decoder.h"
#include "wire_parser.h"

namespace lemon::net::detail {
namespace {

constexpr std::size_t kRecvChunk = 64u << 10;
constexpr std::size_t kMaxResponseHead = 64u << 10;
constexpr std::chrono::milliseconds kMinTick{10};
// How long an answer may take to arrive once a backend that reported work
// in progress no longer does.
constexpr std::chrono::milliseconds kFinishGrace{250};
// How often a watched client is checked while the backend never pauses.
constexpr std::chrono::milliseconds kWatchCheckInterval{100};

bool is_hop_by_hop_or_framing(std::string_view name) {
  return iequals(name, "Host") || iequals(name, "Content-Length") ||
         iequals(name, "Transfer-Encoding") || iequals(name, "Connection");
}

bool method_may_have_body(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH";
}

}  // namespace

UpstreamExchange::UpstreamExchange(int fd, const std::string& endpoint,
                                   const std::string& authorization, const CallOptions& options,
                                   std::optional<Clock::time_point> deadline)
    : fd_(fd),
      endpoint_(endpoint),
      authorization_(authorization),
      options_(options),
      deadline_(deadline),
      tick_interval_(std::max(options.tick_interval, kMinTick)) {
  const auto now = Clock::now();
  next_tick_ = now + tick_interval_;
  if (options_.idle_timeout.count() > 0) {
    idle_deadline_ = now + options_.idle_timeout;
  }
}

UpstreamExchange::Wait UpstreamExchange::wait(short events) {
  for (;;) {
    int timeout = -1;
    auto consider = [&timeout](Clock::time_point tp) {
      int ms = millis_until(tp);
      timeout = timeout < 0 ? ms : std::min(timeout, ms);
    };
    if (deadline_) {
      consider(*deadline_);
    }
    if (idle_deadline_) {
      consider(*idle_deadline_);
    }
    if (options_.on_tick) {
      consider(next_tick_);
    }
    std::array<pollfd, 2> fds{};
    fds[0] = pollfd{fd_, events, 0};
    fds[1] = pollfd{options_.watch_fd, watch_events_, 0};
    const nfds_t count = options_.watch_fd >= 0 ? 2 : 1;
    int rc = ::poll(fds.data(), count, timeout);
    if (rc < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Wait::kError;
    }
    if (count == 2 && watched_client_gone(fds[1].revents, watch_events_, options_)) {
      return Wait::kCancelled;
    }
    if (rc > 0 && fds[0].revents != 0) {
      return Wait::kReady;
    }
    const auto now = Clock::now();
    if (deadline_ && now >= *deadline_) {
      return Wait::kTimedOut;
    }
    if (idle_deadline_ && now >= *idle_deadline_) {
      // Silence before the answer begins may be a long prompt being read: a
      // backend that says it is still working gets another recheck period.
      if (answer_begun() || !options_.still_working) {
        return Wait::kTimedOut;
      }
      if (options_.still_working()) {
        reported_working_ = true;
        idle_deadline_ = Clock::now() + std::max(options_.working_recheck, kMinTick);
      } else if (reported_working_ && !finish_grace_used_) {
        // It was working and has just stopped: llama-server frees a slot
        // before it writes the answer, which may be on its way.
        finish_grace_used_ = true;
        idle_deadline_ = Clock::now() + kFinishGrace;
      } else {
        return Wait::kTimedOut;
      }
    }
    if (options_.on_tick && now >= next_tick_) {
      if (!options_.on_tick()) {
        return Wait::kTickCancelled;
      }
      next_tick_ = Clock::now() + tick_interval_;
    }
  }
}

Error UpstreamExchange::wait_error(Wait w) const {
  switch (w) {
    case Wait::kCancelled:
      return Error(ErrorCode::kCancelled, "client disconnected");
    case Wait::kTickCancelled:
      return Error(ErrorCode::kCancelled, "request cancelled");
    case Wait::kTimedOut:
      if (idle_deadline_ && (!deadline_ || *idle_deadline_ <= *deadline_)) {
        return Error(ErrorCode::kGatewayTimeout, "backend " + endpoint_ + " sent nothing for " +
                                                     std::to_string(options_.idle_timeout.count()) +
                                                     " ms");
      }
      return Error(ErrorCode::kGatewayTimeout, "backend " + endpoint_ + " did not finish in time");
    case Wait::kReady:
    case Wait::kError:
      break;
  }
  return Error(ErrorCode::kInternal, "poll failed: " + errno_text(errno));
}

Error UpstreamExchange::lost(std::string_view when, int err) {
  lost_errno_ = err;
  std::string message = "connection to backend " + endpoint_ + " was lost ";
  message += when;
  if (err != 0) {
    message += ": " + errno_text(err);
  }
  return Error(ErrorCode::kBackendCrashed, std::move(message));
}

Error UpstreamExchange::protocol(std::string_view why) const {
  return Error(ErrorCode::kUpstreamProtocol,
               "malformed response from backend " + endpoint_ + ": " + std::string(why));
}

Error UpstreamExchange::cut_short(std::string_view what, const Error& loss) const {
  // A body that ends before its framing says it does is a broken answer
  // (502), whatever ended it: the head was complete, so the backend was
  // alive and answering. Whether its process died is for the process
  // watcher to find out, not for this call.
  if (loss.code() != ErrorCode::kBackendCrashed) {
    return loss;  // a timeout, a cancel: not the backend's framing
  }
  return protocol(std::string(what) + " (" + loss.message() + ")");
}

bool UpstreamExchange::deliver(std::string_view data) {
  body_started_ = body_started_ || !data.empty();
  const bool go_on = (*on_data_)(data);
  if (options_.events_read && options_.idle_timeout.count() > 0) {
    const std::uint64_t events = options_.events_read();
    if (events != events_seen_) {
      events_seen_ = events;
      idle_deadline_ = Clock::now() + options_.idle_timeout;
    }
  }
  return go_on;
}

UpstreamExchange::Recv UpstreamExchange::receive(std::size_t max, std::string_view& got) {
  // One receive buffer per thread, reused by every exchange that thread
  // runs: no per-request allocation or zero-filling (a thread runs one
  // exchange at a time, and `got` is consumed before the next receive).
  thread_local const std::unique_ptr<char[]> scratch(new char[kRecvChunk]);
  max = std::min(max, kRecvChunk);
  for (;;) {
    ssize_t n = ::recv(fd_, scratch.get(), max, MSG_DONTWAIT);
    if (n > 0) {
      got_bytes_ = true;
      const auto now = Clock::now();
      if (options_.idle_timeout.count() > 0 && (!in_body_ || !options_.events_read)) {
        idle_deadline_ = now + options_.idle_timeout;
      }
      if (options_.watch_fd >= 0 && now >= next_watch_check_) {
        next_watch_check_ = now + kWatchCheckInterval;
        pollfd client{options_.watch_fd, watch_events_, 0};
        if (::poll(&client, 1, 0) > 0 &&
            watched_client_gone(client.revents, watch_events_, options_)) {
          failure_ = wait_error(Wait::kCancelled);
          return Recv::kFailed;
        }
      }
      got = std::string_view(scratch.get(), static_cast<std::size_t>(n));
      return Recv::kData;
    }
    if (n == 0) {
      return Recv::kEof;
    }
    const int err = errno;
    if (err == EINTR) {
      continue;
    }
    if (err == EAGAIN || err == EWOULDBLOCK) {
      Wait w = wait(POLLIN);
      if (w != Wait::kReady) {
        failure_ = wait_error(w);
        return Recv::kFailed;
      }
      continue;
    }
    failure_ = lost(got_bytes_ ? "mid-response" : "before it answered", err);
    return Recv::kFailed;
  }
}

Status UpstreamExchange::send_request(const UpstreamRequest& request) {
  std::string head;
  head.reserve(256 + request.path.size());
  head += request.method;
  head += ' ';
  head += request.path.empty() ? "/" : request.path;
  head += " HTTP/1.1\r\nHost: ";
  head += endpoint_;
  head += "\r\n";
  if (!authorization_.empty()) {
    head += "Authorization: ";
    head += authorization_;
    head += "\r\n";
  }
  if (!request.content_type.empty()) {
    head += "Content-Type: ";
    head += request.content_type;
    head += "\r\n";
  }
  if (!request.body.empty() || !request.content_type.empty() ||
      method_may_have_body(request.method)) {
    head += "Content-Length: ";
    head += std::to_string(request.body.size());
    head += "\r\n";
  }
  for (const auto& [name, value] : request.headers.fields()) {
    if (is_hop_by_hop_or_framing(name) ||
        (!request.content_type.empty() && iequals(name, "Content-Type")) ||
        (!authorization_.empty() && iequals(name, "Authorization"))) {
      continue;
    }
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  head += "\r\n";
  std::array<iovec, 2> iov{iovec{head.data(), head.size()},
                           iovec{const_cast<char*>(request.body.data()), request.body.size()}};
  int start = advance_iov(iov.data(), 2, 0, 0);
  while (start < 2) {
    long n = send_once(fd_, iov.data() + start, 2 - start);
    if (n >= 0) {
      start = advance_iov(iov.data(), 2, start, static_cast<std::size_t>(n));
      continue;
    }
    if (n == -EAGAIN || n == -EWOULDBLOCK) {
      Wait w = wait(POLLOUT);
      if (w != Wait::kReady) {
        return wait_error(w);
      }
      continue;
    }
    return lost("while sending the request", static_cast<int>(-n));
  }
  if (options_.idle_timeout.count() > 0) {
    idle_deadline_ = Clock::now() + options_.idle_timeout;
  }
  return ok_status();
}

Status UpstreamExchange::read_head(UpstreamHead& head, int& minor_version) {
  // A backend may send a few interim 1xx responses; one that sends them
  // forever would hold the request (and a CPU) until the client gave up.
  constexpr int kMaxInterimResponses = 4;
  int interim = 0;
  for (;;) {
    std::size_t scanned = 0;
    std::size_t end = std::string::npos;
    while ((end = wire::find_head_end(buf_, scanned)) == std::string::npos) {
      if (buf_.size() > kMaxResponseHead) {
        return protocol("response head too large");
      }
      scanned = buf_.size() >= 3 ? buf_.size() - 3 : 0;
      std::string_view got;
      switch (receive(kRecvChunk, got)) {
        case Recv::kData:
          buf_.append(got);
          break;
        case Recv::kEof:
          return lost(got_bytes_ ? "mid-response" : "before it answered", 0);
        case Recv::kFailed:
          return *failure_;
      }
    }
    wire::ResponseHead parsed;
    std::string why;
    if (!wire::parse_response_head(std::string_view(buf_).substr(0, end), parsed, why)) {
      return protocol(why);
    }
    buf_.erase(0, end);
    if (parsed.status == 101) {
      return protocol("unexpected protocol switch");
    }
    if (parsed.status < 200) {
      if (++interim > kMaxInterimResponses) {
        return protocol("more than " + std::to_string(kMaxInterimResponses) +
                        " interim 1xx responses");
      }
      continue;
    }
    head.status = parsed.status;
    head.headers = std::move(parsed.headers);
    minor_version = parsed.minor_version;
    return ok_status();
  }
}

Status UpstreamExchange::read_length_body(std::uint64_t length) {
  std::uint64_t remaining = length;
  const std::size_t take =
      static_cast<std::size_t>(std::min<std::uint64_t>(remaining, buf_.size()));
  const std::size_t excess = buf_.size() - take;
  if (take > 0) {
    if (!deliver(std::string_view(buf_).substr(0, take))) {
      return Error(ErrorCode::kCancelled, "request cancelled");
    }
    remaining -= take;
  }
  buf_.clear();
  const auto short_by = [&] {
    return "the body ended " + std::to_string(remaining) + " bytes short of its Content-Length " +
           std::to_string(length);
  };
  while (remaining > 0) {
    std::string_view got;
    switch (
        receive(static_cast<std::size_t>(std::min<std::uint64_t>(remaining, kRecvChunk)), got)) {
      case Recv::kData:
        break;
      case Recv::kEof:
        return protocol(short_by() + ": the backend closed the connection");
      case Recv::kFailed:
        return cut_short(short_by(), *failure_);
    }
    remaining -= got.size();
    if (!deliver(got)) {
      return Error(ErrorCode::kCancelled, "request cancelled");
    }
  }
  // Nothing may follow the body (no request is pipelined): bytes already
  // here mean the backend sent more than it announced. (Bytes still on
  // their way are caught when the idle connection is next taken.)
  char next = 0;
  if (excess > 0 || ::recv(fd_, &next, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
    return protocol("more bytes than its Content-Length " + std::to_string(length));
  }
  return ok_status();
}

Status UpstreamExchange::read_chunked_body(bool& extra) {
  wire::ChunkedDecoder decoder;
  std::string pending = std::move(buf_);
  std::string_view in = pending;
  for (;;) {
    std::string_view piece;
    switch (decoder.next(in, piece)) {
      case wire::ChunkedDecoder::Step::kData:
        if (!deliver(piece)) {
          return Error(ErrorCode::kCancelled, "request cancelled");
        }
        continue;
      case wire::ChunkedDecoder::Step::kDone:
        extra = !in.empty();
        return ok_status();
      case wire::ChunkedDecoder::Step::kError:
      case wire::ChunkedDecoder::Step::kTooLarge:
        return protocol(std::string("bad chunked body: ") + decoder.error());
      case wire::ChunkedDecoder::Step::kNeedMore:
        break;
    }
    switch (receive(kRecvChunk, in)) {
      case Recv::kData:
        break;  // `in` views the receive buffer, consumed before the next receive
      case Recv::kEof:
        // A stream cut off between chunks is what a backend that dies while
        // it generates looks like: a crash (503, or the stream's
        // backend_unavailable event), as the process watcher will also
        // find. Malformed chunk syntax is a protocol error (502) above.
        return lost("mid-response", 0);
      case Recv::kFailed:
        return *failure_;
    }
  }
}

Status UpstreamExchange::read_until_close() {
  if (!buf_.empty()) {
    if (!deliver(buf_)) {
      return Error(ErrorCode::kCancelled, "request cancelled");
    }
    buf_.clear();
  }
  for (;;) {
    std::string_view got;
    switch (receive(kRecvChunk, got)) {
      case Recv::kData:
        break;
      case Recv::kEof:
        return ok_status();
      case Recv::kFailed:
        return *failure_;
    }
    if (!deliver(got)) {
      return Error(ErrorCode::kCancelled, "request cancelled");
    }
  }
}

ExchangeOutcome UpstreamExchange::run(const UpstreamRequest& request,
                                      const std::function<bool(const UpstreamHead&)>& on_head,
                                      const std::function<bool(std::string_view)>& on_data) {
  ExchangeOutcome out;
  on_data_ = &on_data;
  if (auto sent = send_request(request); !sent.ok()) {
    out.retryable = sent.error().code() == ErrorCode::kBackendCrashed;
    out.reset = out.retryable && (lost_errno_ == ECONNRESET || lost_errno_ == EPIPE);
    out.status = std::move(sent);
    return out;
  }
  UpstreamHead head;
  int minor_version = 1;
  if (auto status = read_head(head, minor_version); !status.ok()) {
    out.retryable = !got_bytes_ && status.error().code() == ErrorCode::kBackendCrashed;
    out.reset = out.retryable && (lost_errno_ == ECONNRESET || lost_errno_ == EPIPE);
    out.status = std::move(status);
    return out;
  }
  bool keep_alive = minor_version >= 1 ? !wire::has_token(head.headers, "Connection", "close")
                                       : wire::has_token(head.headers, "Connection", "keep-alive");
  const bool no_body = request.method == "HEAD" || head.status == 204 || head.status == 304;
  const auto coding = wire::transfer_coding(head.headers);
  std::uint64_t length = 0;
  const auto length_field =
      wire::content_length(head.headers, length, wire::Duplicates::kAllowIdentical);
  if (!no_body && coding == wire::TransferCoding::kNone &&
      length_field == wire::LengthField::kInvalid) {
    out.status = protocol("invalid Content-Length");
    return out;
  }
  if (!on_head(head)) {
    out.status = Error(ErrorCode::kCancelled, "request cancelled");
    return out;
  }
  in_body_ = true;
  bool extra = false;
  Status body;
  if (no_body) {
    extra = !buf_.empty();
  } else if (coding == wire::TransferCoding::kChunked) {
    body = read_chunked_body(extra);
  } else if (coding == wire::TransferCoding::kNone && length_field == wire::LengthField::kValid) {
    body = read_length_body(length);
  } else {
    keep_alive = false;
    body = read_until_close();
  }
  out.reusable = body.ok() && keep_alive && !extra;
  out.status = std::move(body);
  return out;
}

}  // namespace lemon::net::detail
