// Forwarding one inference request to a leased backend and writing the
// answer to the client:
// - non-streaming: the backend's body and status pass through; errors are
//   re-wrapped in the router's envelope with the backend's status kept;
// - streaming: every piece the backend writes becomes one chunk to the client
//   at once (no buffering); a stream that breaks ends with an SSE error event
//   and `data: [DONE]`; stats come from the final `timings`/`usage` event,
//   keeping only that event in memory; while the backend is silent (reading
//   a long prompt) the client gets an SSE comment every
//   ProxyCall::heartbeat, between events only, and the response's head
//   first if the backend has not sent its own;
// - the client's socket is watched, so a client that leaves cancels the
//   backend request immediately (also during prompt processing);
// - with ProxyCall::defer_retryable, a failure of which nothing reached the
//   client and that a retry may fix (the backend refused or reset the
//   connection before answering; the chat template rejected the messages)
//   is returned unwritten, for the caller to retry or write.
//
// Thread-safety: runs on the request's connection thread.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/http/error_response.h"
#include "lemon/inference/backend_rejection.h"
#include "lemon/inference/prompt_progress.h"
#include "lemon/inference/sse_scanner.h"
#include "lemon/net/server.h"
#include "lemon/net/upstream_client.h"
#include "lemon/router/lease.h"
#include "lemon/telemetry/request_stats.h"

namespace lemon::inference {

using http::StreamFraming;

struct ProxyCall {
  std::string path;       // backend path, e.g. "/v1/chat/completions"
  std::string_view body;  // bytes to send (must outlive the call)
  std::string content_type = "application/json";
  bool stream = false;
  // kChatCompletions: end SSE streams with data: [DONE] if the backend did not.
  StreamFraming framing = StreamFraming::kChatCompletions;
  // False for a backend's own stream format that has no [DONE] (llama-server's
  // /completion): nothing is added at its end.
  bool add_done = true;
  std::size_t max_response_bytes = 256u << 20;  // non-streaming replies; 502 beyond
  // --request-timeout: a non-streaming call end to end; --stream-idle-timeout:
  // the longest gap between a stream's chunks; --backend-idle-timeout: the
  // longest time without a byte from the backend, streaming or not (a
  // stream gets the smaller of the two idle bounds that are set). Zero:
  // none. On expiry the backend request is cancelled (its connection
  // closed) and the client gets 504 naming the flag.
  std::chrono::milliseconds request_timeout{0};
  std::chrono::milliseconds stream_idle_timeout{0};
  std::chrono::milliseconds backend_idle_timeout{600'000};
  // Set once a shutdown's drain has run out: a backend lost after that was
  // stopped by the shutdown, and the client is told so.
  const std::atomic<bool>* drain_expired = nullptr;
  // Optional: polled about every 100 ms while the backend works; true stops
  // the call as a client's departure does (a session's cancel), writing
  // nothing more to the client.
  std::function<bool()> cancelled;
  // Optional rewrite of a successful non-streaming answer (nullopt: as is).
  std::function<std::optional<std::string>(std::string_view)> transform;
  // Optional: a successful non-streaming answer that is a refusal, written
  // to the client as this error instead (WrappedServer::refusal_in_answer).
  std::function<std::optional<Error>(std::string_view)> refusal;
  // The answer's Content-Type, replacing the backend's ("": the backend's).
  std::string answer_content_type;
  // Return retryable failures unwritten (ProxyOutcome::unanswered).
  bool defer_retryable = false;
  // With defer_retryable, for a remote model's endpoint: also
  // a connection lost before the answer reached the client, and answers
  // with one of these statuses.
  bool defer_lost = false;
  std::vector<int> defer_statuses;
  // How long connecting (and TLS) may take.
  std::chrono::milliseconds connect_timeout{2000};
  // Headers added to a successful answer (X-Lemonade-Sanitized).
  net::Headers extra_headers;
  // Streams: after this long without a byte written to the client, an SSE
  // comment (": ping"); zero: none (--stream-heartbeat).
  std::chrono::milliseconds heartbeat{0};
  // Streams: llama-server's prompt-progress events, asked for by the router
  // and not by the client, are read but not forwarded.
  bool strip_progress = false;
  // Optional: told of each prompt progress the backend reports.
  std::function<void(const PromptProgress&)> on_progress;
  // Optional: whether the backend is still working on the request, asked
  // when the idle bound passes before its first byte (CallOptions::
  // still_working): a llama-server slot processing.
  std::function<bool()> still_working;
};

// A failure forward_to_backend() left unwritten: nothing of it reached the
// client.
struct UnansweredFailure {
  enum class Kind {
    kUnreachable,  // refused, or closed/reset before any byte: `error`
    kRejected,     // an HTTP error answer: `status`, `body`, `rejection`
  };
  Kind kind = Kind::kUnreachable;
  Error error{ErrorCode::kBackendUnavailable, ""};
  int status = 0;
  std::string body;
  BackendRejection rejection = BackendRejection::kOther;
};

struct ProxyOutcome {
  std::optional<RequestStats> stats;            // the request succeeded
  std::optional<UnansweredFailure> unanswered;  // only with defer_retryable
  // The backend's failure that was written to the client (a timeout, a
  // connection lost mid-answer, garbage), if that is how it ended.
  std::optional<ErrorCode> backend_error;
  // Ended by ProxyCall::cancelled: nothing more was written.
  bool stopped = false;
  // InferenceGateway's: the model is a remote one, not for a lease.
  bool remote = false;
};

// What a request is forwarded to: a leased local server, or one endpoint of
// a remote model. `release` ends the target's in-flight count
// (Lease::release); it is called once the backend has ended its answer.
struct ProxyTarget {
  net::UpstreamCalls& client;
  const std::string& model;  // for messages and stats
  std::function<void()> release;
};

// Forwards one request. `stats` gets the figures of a request that
// succeeded (also returned). On success `lease` is released once the backend
// has ended its answer and before the answer's end (a stream's [DONE], a
// whole body) is written, so a client that sends its next request as soon
// as it has read this one finds the backend's slot free; the lease must not
// be used after a success.
ProxyOutcome forward_to_backend(Lease& lease, const ProxyCall& call, net::ResponseWriter& writer,
                                StatsStore& stats);
// The same to any target.
ProxyOutcome forward_to_target(const ProxyTarget& target, const ProxyCall& call,
                               net::ResponseWriter& writer, StatsStore& stats);

// Writes a failure forward_to_backend() left unwritten, as it would have;
// `model` names the model in the message.
void write_unanswered(net::ResponseWriter& writer, const std::string& model, const ProxyCall& call,
                      const UnansweredFailure& failure);

}  // namespace lemon::inference
