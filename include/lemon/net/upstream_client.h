// UpstreamClient: the backend-facing HTTP/1.1 client for one backend
// (host:port on loopback), with a pool of idle keep-alive connections.
//
// Every call can watch the downstream client's socket (CallOptions::watch_fd):
// when that client hangs up, the upstream connection is closed at once, so the
// backend stops work even during prompt processing.
// Errors are typed where they happen: cannot connect, or the
// connection reset before any byte of a response -> kBackendUnavailable
// (nothing was answered: a caller may retry), connection closed before an
// answer, or lost within the head or a body read until close ->
// kBackendCrashed, watched client gone -> kCancelled, garbage -> kUpstreamProtocol (502), and so is
// a body that does not match its framing: the connection lost before the Content-Length or the last
// chunk arrived, or bytes beyond the Content-Length. A connect timeout is kBackendUnavailable; an
// idle or total timeout is kGatewayTimeout.
//
// Thread-safety: all methods may be called concurrently; each call uses its
// own connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lemon/core/error.h"
#include "lemon/net/message.h"

namespace lemon::net {

struct UpstreamRequest {
  std::string method = "POST";
  std::string path;          // "/v1/chat/completions"
  std::string content_type;  // "" for no body
  std::string_view body;     // must outlive the call
  Headers headers;           // extra request headers
};

struct CallOptions {
  int watch_fd = -1;  // downstream client socket to watch for hang-up, or -1
  // Called once if the watched client shuts down only its sending side (a
  // half-close): true keeps the call going, watching for a reset or full
  // close only (ResponseWriter::keep_serving_half_closed); unset or false
  // cancels it like a disconnect.
  std::function<bool()> on_client_half_close;
  std::chrono::milliseconds connect_timeout{2000};
  // Longest silence allowed from the backend once the request is sent;
  // zero means no limit (generation can legitimately take minutes).
  // Expiry is kGatewayTimeout.
  std::chrono::milliseconds idle_timeout{0};
  // The whole call, connect to last byte; zero means no limit. Expiry is
  // kGatewayTimeout.
  std::chrono::milliseconds total_timeout{0};
  // Optional: asked whenever `idle_timeout` passes before the answer has
  // begun (see answer_started; its head may have come: llama-server sends a
  // stream's head when the prompt starts). True (the backend reports it is
  // still working on the request, e.g. a slot processing in its /slots)
  // waits `working_recheck` more, then asks again; false or unset times out
  // as usual, except that a backend that said true before gets 250 ms more
  // once, for an answer written just after its slot was freed.
  std::function<bool()> still_working;
  std::chrono::milliseconds working_recheck{1000};
  // Optional: whether the answer has begun, as the caller reads the body it
  // is given (a stream's first data event: an SSE comment, such as
  // llama-server's own ping during a long prompt, or a progress report is
  // not the answer). Unset: any byte of the body counts.
  std::function<bool()> answer_started;
  // Optional, for a body the caller reads as events (an SSE stream): how
  // many events that show the backend at work it has read so far (data
  // events and progress reports, not comments), asked after each piece of
  // body is passed on. When set, silence is measured from the head or the
  // last such event: bytes that add none (a backend's own pings) do not
  // restart `idle_timeout`. Unset: every byte restarts it.
  std::function<std::uint64_t()> events_read;
  // Optional: called about every `tick_interval` while waiting for bytes
  // (e.g. to send SSE keepalive comments during prompt processing). Return
  // false to abort the call with kCancelled.
  std::function<bool()> on_tick;
  std::chrono::milliseconds tick_interval{1000};
  // send() only: a reply body larger than this fails with kUpstreamProtocol
  // (502) and the connection is closed (a backend that is not what the user
  // thought it was must not grow the router without bound).
  std::size_t max_response_bytes = 256u << 20;
};

// What the watched client's poll events mean for a call: true if it must
// stop. A reset or a full close always stops it. A half-close (POLLRDHUP)
// asks options.on_client_half_close once; if the client is kept,
// watch_events becomes 0, so that from then on only a reset or a full close
// (POLLHUP/POLLERR, reported whatever was asked for) counts. Shared by every
// UpstreamCalls implementation.
bool watched_client_gone(short revents, short& watch_events, const CallOptions& options);

struct UpstreamHead {
  int status = 0;
  Headers headers;
};

struct UpstreamResponse {
  int status = 0;
  Headers headers;
  std::string body;
};

// The calls the proxy makes to a backend, whatever carries them: our own
// HTTP/1.1 client below (local backends, plain-HTTP remotes), or libcurl
// for https:// remotes (lemon/download/curl_upstream.h). Both keep
// the contract above: the same error codes for the same failures, the same
// timeouts, the watched client.
class UpstreamCalls {
 public:
  virtual ~UpstreamCalls() = default;
  // Sends the request and reads the whole response through stream(): at
  // most options.max_response_bytes of body, beyond which the call ends
  // with kUpstreamProtocol (502) and its connection is closed (a backend
  // that is not what the user thought it was must not grow the router
  // without bound).
  Result<UpstreamResponse> send(const UpstreamRequest& request, const CallOptions& options);
  // Sends the request and streams the response body: on_head once, then
  // on_data for every piece of (de-chunked) body as soon as it is read, in
  // order. A callback returning false aborts the call (the connection is
  // closed, not reused) and the result is kCancelled.
  virtual Status stream(const UpstreamRequest& request, const CallOptions& options,
                        const std::function<bool(const UpstreamHead&)>& on_head,
                        const std::function<bool(std::string_view)>& on_data) = 0;
};

class UpstreamClient final : public UpstreamCalls {
 public:
  // `bearer_token`, when not empty, is sent as "Authorization: Bearer
  // <token>" on every call and probe (the backend's secret), in
  // place of any Authorization header a request carries. It is never logged.
  UpstreamClient(std::string host, int port, std::size_t max_idle_connections = 64,
                 const std::string& bearer_token = {});
  ~UpstreamClient() override;
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  const std::string& host() const;
  int port() const;

  // More than 4 interim 1xx responses are kUpstreamProtocol.
  Status stream(const UpstreamRequest& request, const CallOptions& options,
                const std::function<bool(const UpstreamHead&)>& on_head,
                const std::function<bool(std::string_view)>& on_data) override;

  // A short GET used for readiness probes: the status code, or an error when
  // nothing answered within `timeout`. Never uses pooled connections.
  Result<int> probe(const std::string& path, std::chrono::milliseconds timeout);

  // Closes all pooled idle connections (e.g. when the backend stops).
  void close_idle();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lemon::net
