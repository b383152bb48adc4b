#include "lemon/inference/inference_proxy.h"

#include <algorithm>
#include <chrono>

#include "lemon/core/clock.h"
#include "lemon/core/log.h"
#include "lemon/http/error_response.h"
#include "lemon/inference/backend_usage.h"
#include "lemon/inference/sse_scanner.h"
#include "lemon/net/upstream_client.h"

namespace lemon::inference {

using http::StreamFraming;

using http::end_stream_with_error;
using http::json_headers;
using http::json_text;
using http::write_error;
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
constexpr std::size_t kMaxErrorBody = 64u << 10;

// A timeout flag and its value.
struct Bound {
  const char* flag;
  std::chrono::milliseconds limit;
};

// The bound on the backend's silence: --backend-idle-timeout, or for a
// stream --stream-idle-timeout when that one is set and smaller. A zero
// limit is none.
Bound idle_bound(const ProxyCall& call) {
  if (call.stream && call.stream_idle_timeout.count() > 0 &&
      (call.backend_idle_timeout.count() == 0 ||
       call.stream_idle_timeout <= call.backend_idle_timeout)) {
    return {"--stream-idle-timeout", call.stream_idle_timeout};
  }
  return {"--backend-idle-timeout", call.backend_idle_timeout};
}

// Which bound a kGatewayTimeout after `elapsed` came from: the upstream
// client prefers the idle deadline when it is not later than the total one,
// so --request-timeout fired only if that much time has passed.
Bound fired_bound(const ProxyCall& call, Clock::duration elapsed) {
  if (!call.stream && call.request_timeout.count() > 0 && elapsed >= call.request_timeout) {
    return {"--request-timeout", call.request_timeout};
  }
  return idle_bound(call);
}

Error backend_failure(const std::string& model, Error e, const ProxyCall& call,
                      Clock::duration elapsed = {}) {
  // A backend that breaks off its answer (kUpstreamProtocol for a body cut
  // short) after the drain ran out was stopped by the shutdown.
  if (call.drain_expired != nullptr && call.drain_expired->load() &&
      (e.code() == ErrorCode::kBackendCrashed || e.code() == ErrorCode::kBackendUnavailable ||
       e.code() == ErrorCode::kUpstreamProtocol)) {
    return Error(ErrorCode::kShuttingDown,
                 "the router is shutting down: --drain-timeout passed before this request to '" +
                     model + "' finished");
  }
  if (e.code() == ErrorCode::kGatewayTimeout) {
    const Bound fired = fired_bound(call, elapsed);
    return Error(ErrorCode::kGatewayTimeout,
                 std::string(fired.flag) + " (" + std::to_string(fired.limit.count()) +
                     " ms) expired for model '" + model + "': " + e.message());
  }
  if (e.code() == ErrorCode::kBackendCrashed || e.code() == ErrorCode::kBackendUnavailable ||
      e.code() == ErrorCode::kUpstreamProtocol) {
    return Error(e.code(), "backend for model '" + model + "' failed: " + e.message());
  }
  return e;
}

net::Headers sse_headers(std::string_view content_type) {
  return net::Headers{
      {"Content-Type", content_type.empty() ? "text/event-stream" : std::string(content_type)},
      {"Cache-Control", "no-cache"},
      {"X-Accel-Buffering", "no"}};
}

// Records `s` (the backend's own figures already in it) with what the
// stream showed, when there was one.
RequestStats record(StatsStore& stats, RequestStats s, const SseScanner* scanner) {
  if (scanner != nullptr) {
    if (s.time_to_first_token == 0.0) {
      s.time_to_first_token = scanner->first_event_latency().value_or(0.0);
    }
    if (s.tokens_per_second == 0.0 && scanner->generation_seconds() > 0.0) {
      int tokens = s.output_tokens > 0 ? s.output_tokens : static_cast<int>(scanner->data_events());
      s.tokens_per_second = tokens / scanner->generation_seconds();
    }
    s.decode_token_times = scanner->gaps();
  }
  s.finished_ms = unix_ms_now();
  stats.record(s);
  return s;
}

constexpr std::chrono::milliseconds kCancelPoll{100};

// A caller's own cancel (ProxyCall::cancelled), polled between the bytes,
// and its test of a silent backend (ProxyCall::still_working).
void watch_cancel(const ProxyCall& call, net::CallOptions& opts) {
  if (call.cancelled) {
    opts.on_tick = [&call] { return !call.cancelled(); };
    opts.tick_interval = kCancelPoll;
  }
  opts.still_working = call.still_working;
}

// The backend request `call` describes.
net::UpstreamRequest upstream_request(const ProxyCall& call) {
  net::UpstreamRequest req;
  req.path = call.path;
  req.content_type = call.content_type;
  req.body = call.body;
  return req;
}

// What every forward's call watches: the client (a hang-up or a kept
// half-close), the caller's cancel and its test of a silent backend.
net::CallOptions call_options(const ProxyCall& call, net::ResponseWriter& writer) {
  net::CallOptions opts;
  opts.watch_fd = writer.client_fd();
  opts.on_client_half_close = [&writer] { return writer.keep_serving_half_closed(); };
  opts.connect_timeout = call.connect_timeout;
  watch_cancel(call, opts);
  return opts;
}

// The backend's error answer, in the router's envelope with its status.
void write_rejection(net::ResponseWriter& writer, int status, std::string_view body,
                     StreamFraming framing) {
  auto envelope = normalize_backend_error(body, status);
  if (!writer.headers_sent()) {
    writer.send(status, json_headers(), json_text(envelope));
  } else {
    end_stream_with_error(writer, json_text(envelope), framing);
  }
}

ProxyOutcome deferred_outcome(std::optional<UnansweredFailure> failure) {
  ProxyOutcome out;
  out.unanswered = std::move(failure);
  return out;
}

ProxyOutcome succeeded_outcome(const RequestStats& figures) {
  ProxyOutcome out;
  out.stats = figures;
  return out;
}

// A failure with nothing written yet, returned to a caller that may retry.
std::optional<UnansweredFailure> deferrable(const ProxyCall& call, const Error& e) {
  if (!call.defer_retryable || (e.code() != ErrorCode::kBackendUnavailable &&
                                !(call.defer_lost && e.code() == ErrorCode::kBackendCrashed))) {
    return std::nullopt;
  }
  UnansweredFailure f;
  f.kind = UnansweredFailure::Kind::kUnreachable;
  f.error = e;
  return f;
}

std::optional<UnansweredFailure> deferrable(const ProxyCall& call, int status,
                                            std::string_view body) {
  if (!call.defer_retryable) {
    return std::nullopt;
  }
  if (std::find(call.defer_statuses.begin(), call.defer_statuses.end(), status) !=
      call.defer_statuses.end()) {
    UnansweredFailure f;
    f.kind = UnansweredFailure::Kind::kRejected;
    f.status = status;
    f.body = std::string(body.substr(0, kMaxErrorBody));
    return f;
  }
  const auto rejection = classify_backend_rejection(status, body);
  if (rejection != BackendRejection::kTemplate) {
    return std::nullopt;
  }
  UnansweredFailure f;
  f.kind = UnansweredFailure::Kind::kRejected;
  f.status = status;
  f.body = std::string(body);
  f.rejection = rejection;
  return f;
}

void add_extra(net::Headers& headers, const ProxyCall& call) {
  for (const auto& [name, value] : call.extra_headers.fields()) {
    headers.add(name, value);
  }
}

ProxyOutcome forward_whole(const ProxyTarget& target, const ProxyCall& call,
                           net::ResponseWriter& writer, StatsStore& stats) {
  const std::string& model = target.model;
  const net::UpstreamRequest req = upstream_request(call);
  net::CallOptions opts = call_options(call, writer);
  opts.max_response_bytes = call.max_response_bytes;
  opts.total_timeout = call.request_timeout;
  opts.idle_timeout = call.backend_idle_timeout;
  const auto started = Clock::now();
  auto resp = target.client.send(req, opts);
  if (!resp.ok()) {
    if (auto deferred = deferrable(call, resp.error())) {
      return deferred_outcome(std::move(deferred));
    }
    ProxyOutcome out;
    if (resp.error().code() != ErrorCode::kCancelled) {
      out.backend_error = resp.error().code();
      write_error(writer,
                  backend_failure(model, std::move(resp).error(), call, Clock::now() - started),
                  call.framing);
    } else {
      out.stopped = call.cancelled && call.cancelled();
    }
    return out;
  }
  if (resp->status >= 400) {
    if (auto deferred = deferrable(call, resp->status, resp->body)) {
      return deferred_outcome(std::move(deferred));
    }
    write_rejection(writer, resp->status, resp->body, call.framing);
    return {};
  }
  if (call.refusal) {
    if (auto refused = call.refusal(resp->body)) {
      write_error(writer, *refused, call.framing);
      return {};
    }
  }
  net::Headers headers;
  headers.add("Content-Type",
              !call.answer_content_type.empty()
                  ? call.answer_content_type
                  : std::string(resp->headers.get("Content-Type").value_or("application/json")));
  add_extra(headers, call);
  std::optional<std::string> transformed;
  if (call.transform) {
    transformed = call.transform(resp->body);
  }
  RequestStats answered;
  answered.model = model;
  stats_from_answer(resp->body, answered);
  RequestStats figures = record(stats, std::move(answered), nullptr);
  // The backend is done: its slot is free before the client has the answer,
  // so a client that sends its next request at once never finds this one
  // still holding it (and is never given a session's slot instead).
  target.release();
  writer.send(resp->status, headers, transformed ? *transformed : resp->body);
  return succeeded_outcome(figures);
}

// What a stream has written to its client, for the heartbeat: when, and
// whether the last write ended an event.
class StreamClient {
 public:
  StreamClient(net::ResponseWriter& writer, const ProxyCall& call)
      : writer_(writer), call_(call), last_write_(Clock::now()) {}

  bool begin(const net::Headers& headers) { return writer_.begin_chunked(200, headers); }
  bool write(std::string_view data, bool ends_event) {
    last_write_ = Clock::now();
    between_events_ = ends_event;
    return writer_.write_chunk(data);
  }
  // One heartbeat if the client has heard nothing for ProxyCall::heartbeat
  // and no event is half written; the response's head first if the
  // backend has not answered yet. False once the client is gone.
  bool heartbeat_if_due() {
    if (call_.heartbeat.count() <= 0 || !between_events_ ||
        Clock::now() - last_write_ < call_.heartbeat) {
      return true;
    }
    if (!writer_.headers_sent() && !begin(sse_headers(""))) {
      return false;
    }
    return write(": ping\n\n", true);
  }

 private:
  net::ResponseWriter& writer_;
  const ProxyCall& call_;
  Clock::time_point last_write_;
  bool between_events_ = true;
};

ProxyOutcome forward_stream(const ProxyTarget& target, const ProxyCall& call,
                            net::ResponseWriter& writer, StatsStore& stats) {
  const std::string& model = target.model;
  const net::UpstreamRequest req = upstream_request(call);
  net::CallOptions opts = call_options(call, writer);
  opts.idle_timeout = idle_bound(call).limit;
  SseScanner scanner(Clock::now());
  StreamClient client(writer, call);
  ProgressStripper stripper;
  int status = 0;
  std::string error_body;
  bool client_gone = false;
  if (call.heartbeat.count() > 0) {
    opts.tick_interval = std::min(call.heartbeat, kCancelPoll);
    opts.on_tick = [&] {
      if (call.cancelled && call.cancelled()) {
        return false;
      }
      // Not while the backend's error answer is being read: it becomes the
      // client's status if nothing was written yet.
      if (status < 400 && !client.heartbeat_if_due()) {
        client_gone = true;
        return false;
      }
      return true;
    };
  }
  // The answer begins with its first data event (or an error answer's
  // body): the backend's own SSE comments and progress reports before it
  // leave the prefill check on (CallOptions::answer_started).
  opts.answer_started = [&] { return status >= 400 || scanner.data_events() > 0; };
  opts.events_read = [&]() -> std::uint64_t {
    return status >= 400 ? error_body.size() : scanner.data_events() + scanner.progress_reports();
  };
  std::size_t progress_told = 0;
  // The piece that carries the backend's [DONE] (and anything after it)
  // waits until the backend has ended its answer and the lease is released,
  // as the whole answer does in forward_whole().
  std::string held;
  Status result = target.client.stream(
      req, opts,
      [&](const net::UpstreamHead& head) {
        status = head.status;
        if (status >= 400 || writer.headers_sent()) {
          return true;
        }
        net::Headers headers = sse_headers(head.headers.get("Content-Type").value_or(""));
        add_extra(headers, call);
        if (!client.begin(headers)) {
          client_gone = true;
          return false;
        }
        return true;
      },
      [&](std::string_view data) {
        if (status >= 400) {
          if (error_body.size() < kMaxErrorBody) {
            error_body.append(data.substr(0, kMaxErrorBody - error_body.size()));
          }
          return true;
        }
        const bool done_before = scanner.saw_done();
        const bool starts_event = scanner.at_boundary();
        scanner.feed(data, Clock::now());
        if (call.on_progress && scanner.progress_reports() != progress_told) {
          progress_told = scanner.progress_reports();
          call.on_progress(*scanner.progress());
        }
        if (call.cancelled && call.cancelled()) {
          client_gone = true;  // stopped by the caller: nothing more is written
          return false;
        }
        // What the client gets: progress it did not ask for is dropped
        // (whole events only then), backend errors in the router's shape.
        std::string_view out = call.strip_progress ? stripper.feed(data) : data;
        const bool ends_event = call.strip_progress ? true : scanner.at_boundary();
        std::optional<std::string> rewritten;
        if (call.strip_progress || starts_event) {
          rewritten = normalize_sse_error_events(out, call.framing);
        }
        if (rewritten) {
          out = *rewritten;
        }
        if (out.empty()) {
          return true;
        }
        if (done_before || scanner.saw_done()) {
          held.append(out);
          return true;
        }
        if (!client.write(out, ends_event)) {
          client_gone = true;
          return false;
        }
        return true;
      });
  if (client_gone || (!result.ok() && result.error().code() == ErrorCode::kCancelled)) {
    logger("http")->debug("client left a stream from '{}'", model);
    ProxyOutcome out;
    out.stopped = call.cancelled && call.cancelled();
    return out;
  }
  if (status >= 400) {
    if (auto deferred = deferrable(call, status, error_body)) {
      return deferred_outcome(std::move(deferred));
    }
    write_rejection(writer, status, error_body, call.framing);
    return {};
  }
  // A connection lost after the backend's [DONE] has the whole answer.
  if (!result.ok() && !scanner.saw_done()) {
    if (status == 0) {
      if (auto deferred = deferrable(call, result.error())) {
        return deferred_outcome(std::move(deferred));
      }
    }
    ProxyOutcome out;
    out.backend_error = result.error().code();
    write_error(writer, backend_failure(model, std::move(result).error(), call), call.framing);
    return out;
  }
  RequestStats streamed;
  streamed.model = model;
  if (const auto& usage = scanner.last_usage()) {
    stats_from_backend_json(*usage, streamed);
  }
  RequestStats figures = record(stats, std::move(streamed), &scanner);
  target.release();  // the backend is done; see `held`
  if (!held.empty()) {
    writer.write_chunk(held);
  }
  if (call.framing == StreamFraming::kChatCompletions && call.add_done && !scanner.saw_done()) {
    writer.write_chunk("data: [DONE]\n\n");
  }
  writer.finish();
  return succeeded_outcome(figures);
}

}  // namespace

ProxyOutcome forward_to_target(const ProxyTarget& target, const ProxyCall& call,
                               net::ResponseWriter& writer, StatsStore& stats) {
  return call.stream ? forward_stream(target, call, writer, stats)
                     : forward_whole(target, call, writer, stats);
}

ProxyOutcome forward_to_backend(Lease& lease, const ProxyCall& call, net::ResponseWriter& writer,
                                StatsStore& stats) {
  return forward_to_target(
      {lease.server().client(), lease.model_name(), [&lease] { lease.release(); }}, call, writer,
      stats);
}

void write_unanswered(net::ResponseWriter& writer, const std::string& model, const ProxyCall& call,
                      const UnansweredFailure& failure) {
  if (failure.kind == UnansweredFailure::Kind::kUnreachable) {
    write_error(writer, backend_failure(model, failure.error, call), call.framing);
  } else {
    write_rejection(writer, failure.status, failure.body, call.framing);
  }
}

}  // namespace lemon::inference
