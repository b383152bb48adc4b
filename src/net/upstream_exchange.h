// One request/response exchange with a backend on an already connected,
// non-blocking socket: writes the request with one gathered send, reads the
// response head (skipping 1xx), then the body by Content-Length, chunked
// coding or until close, handing every piece to the caller as soon as it is
// read. Every wait polls the backend socket together with the downstream
// client's socket (CallOptions::watch_fd), so a client hang-up aborts the
// exchange at once.
//
// Internal to src/net. Thread-safety: one exchange per calling thread.
#pragma once

#include <poll.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io.h"
#include "lemon/core/error.h"
#include "lemon/net/upstream_client.h"

namespace lemon::net::detail {

using net::watched_client_gone;

struct ExchangeOutcome {
  Status status;
  bool reusable = false;   // complete response on a keep-alive connection
  bool retryable = false;  // failed before the backend answered a single byte
  bool reset = false;      // ... because it reset the connection (ECONNRESET, EPIPE)
};

class UpstreamExchange {
 public:
  // `endpoint` ("127.0.0.1:8001") is used for the Host header and messages;
  // `authorization` (may be empty) is sent as the Authorization header, in
  // place of any the request carries; both are kept by reference and must
  // outlive the exchange. `deadline`, when set, bounds the whole exchange
  // (probes).
  UpstreamExchange(int fd, const std::string& endpoint, const std::string& authorization,
                   const CallOptions& options, std::optional<Clock::time_point> deadline);

  ExchangeOutcome run(const UpstreamRequest& request,
                      const std::function<bool(const UpstreamHead&)>& on_head,
                      const std::function<bool(std::string_view)>& on_data);

 private:
  enum class Wait { kReady, kCancelled, kTickCancelled, kTimedOut, kError };
  enum class Recv { kData, kEof, kFailed };

  Wait wait(short events);
  // Receives into this thread's buffer; on kFailed, failure_ holds the error.
  Recv receive(std::size_t max, std::string_view& got);
  Error wait_error(Wait w) const;
  Error lost(std::string_view when, int err);  // records err in lost_errno_
  Error protocol(std::string_view why) const;
  // A body cut short by `loss`: kUpstreamProtocol when the connection was
  // lost (closed or reset), else `loss` itself (a timeout, a cancel).
  Error cut_short(std::string_view what, const Error& loss) const;

  Status send_request(const UpstreamRequest& request);
  // Passes body bytes to the caller's on_data; restarts the idle bound when
  // they added events (CallOptions::events_read).
  bool deliver(std::string_view data);
  // Whether the answer has begun (CallOptions::answer_started, else a
  // body byte passed on).
  bool answer_begun() const {
    return options_.answer_started ? options_.answer_started() : body_started_;
  }
  Status read_head(UpstreamHead& head, int& minor_version);
  // Fewer bytes than `length` (the connection lost first) or more (bytes
  // seen after the body) are kUpstreamProtocol.
  Status read_length_body(std::uint64_t length);
  Status read_chunked_body(bool& extra);
  Status read_until_close();

  int fd_;
  int lost_errno_ = 0;  // errno of the last loss (0: an orderly close)
  const std::string& endpoint_;
  const std::string& authorization_;
  const CallOptions& options_;
  std::optional<Clock::time_point> deadline_;
  std::optional<Clock::time_point> idle_deadline_;
  bool reported_working_ = false;  // still_working() said so at least once
  bool finish_grace_used_ = false;
  Clock::time_point next_tick_;
  // While the backend sends without pause, recv() never waits, so the
  // watched client is also checked at least this often.
  Clock::time_point next_watch_check_;
  std::chrono::milliseconds tick_interval_;
  const std::function<bool(std::string_view)>* on_data_ = nullptr;
  std::string buf_;  // received, not yet consumed
  bool got_bytes_ = false;
  bool body_started_ = false;  // a byte of the body was passed on
  bool in_body_ = false;       // the head was read: only events restart the idle bound
  std::uint64_t events_seen_ = 0;
  std::optional<Error> failure_;
  short watch_events_ = POLLRDHUP;  // 0 once a half-closed client is kept
};

}  // namespace lemon::net::detail
