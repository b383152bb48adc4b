// InferenceGateway: the one path of every inference request, whatever API
// it came in by (OpenAI, Anthropic, Ollama), once its room has translated it.
// forward() does, each once and in this order: the caller's key against the
// model, the routing policy the model may name (PolicyRouting: `model`
// becomes the candidate it chose, the answer shows the decision), images
// against the model, the preset's values, the sampling
// defaults (/params), then the model's lease through the ModelProvisioner
// (auto-load, download, install) or a remote model's endpoints, keepalives
// while it loads, the backend's body (rewritten forms, prefill limit,
// long-prompt progress), the forward, the retries of what may be retried,
// and the request's metrics once it ends.
//
// Ownership: holds references to the settings, provisioner, stats store and
// telemetry hub it is given, which outlive it. Thread-safety: forward() may
// run on any number of connection threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/backends/wrapped_server.h"
#include "lemon/core/mutex.h"
#include "lemon/http/api_keys.h"
#include "lemon/http/error_response.h"
#include "lemon/inference/generation_defaults.h"
#include "lemon/inference/inference_proxy.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/inference/policy_routing.h"
#include "lemon/remote/remote_models.h"
#include "lemon/router/router.h"
#include "lemon/telemetry/request_stats.h"
#include "lemon/telemetry/telemetry_hub.h"

namespace lemon::inference {

using http::StreamFraming;

using http::ApiKey;

class TranslatingWriter;

// What a backend call may take and how long (the router's limits).
struct ForwardSettings {
  // Largest non-streaming backend reply passed on (--max-response-size).
  std::size_t max_response_bytes = 256u << 20;
  // --request-timeout, --stream-idle-timeout and --backend-idle-timeout
  // (zero: none).
  std::chrono::milliseconds request_timeout{0};
  std::chrono::milliseconds stream_idle_timeout{0};
  std::chrono::milliseconds backend_idle_timeout{600'000};
  // A request whose backend refused or reset the connection before
  // answering is retried after this, then twice and four times as long
  // (seed 003); zero: never.
  std::chrono::milliseconds backend_retry_delay{1000};
  // How often a streaming client waiting for a load gets ": loading".
  std::chrono::milliseconds keepalive_interval{1000};
  // --stream-heartbeat: a stream whose backend is silent this long (reading
  // a long prompt) gets ": ping" (zero: none).
  std::chrono::milliseconds stream_heartbeat{1000};
  // --max-prefill-tokens: a chat or completion whose prompt has more tokens
  // is refused with 400 before it reaches the backend (0: no limit).
  long long max_prefill_tokens = 0;
  // --no-models-autoload (llama-server's): a request for a model that is
  // neither loaded nor loading fails (kModelNotLoaded) instead of loading
  // it, unless the request says ?autoload=true.
  bool no_models_autoload = false;
};

// One inference request on its way to a backend.
struct InferenceRequest {
  ApiRoute route = ApiRoute::kChatCompletions;
  std::string model;
  bool stream = false;
  nlohmann::json* json = nullptr;  // parsed body of JSON routes (may be rewritten)
  bool body_changed = false;       // json differs from raw_body
  std::string_view raw_body;
  std::string content_type;
  // Multipart routes whose form the backend rewrites (image edits).
  const std::vector<FormField>* form = nullptr;
  // The request's keep_alive (Ollama's): how long its model stays loaded.
  std::optional<KeepAlive> keep_alive;
  // Optional rewrite of a successful non-streaming answer.
  std::function<std::optional<std::string>(std::string_view)> transform;
  // The answer's Content-Type, replacing the backend's ("": the backend's).
  std::string answer_content_type;
  // json's id_slot was set by the router for the current attempt's lease.
  bool slot_set_by_router = false;
  // The router's number for it, in its `request` events.
  std::uint64_t id = 0;
  // The request's ?autoload=true|false (llama-server's), over
  // --no-models-autoload; nullopt when it says nothing.
  std::optional<bool> autoload;
  // A llama-server route of its own (/completion, /infill, /tokenize, ...):
  // the backend's path, forwarded as it is to a llamacpp server (another
  // recipe gets 400 unsupported_operation), with no [DONE] added to a
  // stream. "": the route's own path.
  std::string native_path;
  // The caller's API key (caller_key()): its allow-list of models is
  // checked before anything loads; its name labels the request's metrics.
  const ApiKey* key = nullptr;
  // Set by forward(): the model as the client named it, when a preset
  // changed `model` (the name a key's model list is matched against).
  std::string requested_model;
  // The request carries images, in this field (named in the error when the
  // model cannot take them); "" when it carries none.
  std::string images_field;
  // Set by the rooms that translate the answer (Anthropic, Ollama): a routed
  // answer's x-lemonade-route header goes on it, and its body is not
  // stamped with x_lemonade_route.
  TranslatingWriter* translating = nullptr;
  // Set by forward() when `model` named a routing policy: its decision
  // (`model` is then the candidate it chose).
  std::optional<RoutedRequest> routed;
};

// How `route` ends a stream that breaks (the Responses API's own error event).
StreamFraming framing_for(ApiRoute route);

class InferenceGateway {
 public:
  // `drain_expired` turns true when the shutdown's drain ran out.
  InferenceGateway(const ForwardSettings& settings, ModelProvisioner& provisioner,
                   const GenerationDefaults& defaults, StatsStore& stats,
                   telemetry::TelemetryHub& hub, const std::atomic<bool>& drain_expired);

  // `req.model` as the client named it: the checks, preset and defaults of
  // the header's list, then acquire (auto-load, keepalives, cancellation)
  // and the forward; writes the answer or the error to `w`, and records the
  // request's metrics once it ends.
  void forward(InferenceRequest& req, net::ResponseWriter& w);

  // A backend call with the router's limits (sizes, timeouts, the drain):
  // what every call, inference or a session's turn, shares.
  ProxyCall limited_call(std::string path, std::string content_type, bool stream) const;

  // The limits in force (a copy: a reload may change them at any time).
  ForwardSettings settings() const LEMON_EXCLUDES(settings_mu_);
  // A reloaded configuration's limits and timeouts: requests
  // that start from now on follow them; those under way keep theirs.
  void set_settings(const ForwardSettings& settings) LEMON_EXCLUDES(settings_mu_);
  // Serves the models of `remote` from their endpoints.
  // Set once, before the server serves; it outlives the gateway.
  void serve_remote(remote::RemoteModels* remote) { remote_ = remote; }
  // Routes requests that name a routing policy (collection.router) through
  // `policies`, and refuses a collection.omni's chat. Set once, before the
  // server serves; it outlives the gateway.
  void serve_policies(PolicyRouting* policies) { policies_ = policies; }

  // One JSON call to `model` on `route` that the router makes itself (a
  // routing classifier's): a lease like any request's (auto-load
  // included), nothing of it later than `deadline` (kGatewayTimeout), and
  // `cancelled` stops it. The answer's JSON body, or the error (a backend's
  // error answer as its error). Not counted in /stats.
  Result<nlohmann::json> call_model(const std::string& model, ApiRoute route, nlohmann::json body,
                                    std::chrono::steady_clock::time_point deadline,
                                    const std::function<bool()>& cancelled);
  // A session's turn that succeeded (sessions go to their server directly,
  // not through forward()): counted in the request and token metrics as a
  // request of route "sessions", and in the caller key's token counters.
  void record_session_turn(const ApiKey* key, const std::string& model, bool stream,
                           double duration_s, const RequestStats& figures);
  // Streams `model` (its internal name) is answering now: counted from
  // the backend's lease to the stream's end.
  int open_streams(const std::string& model) const LEMON_EXCLUDES(streams_mu_);

  // The model a session created on `model` runs on: the candidate its
  // routing policy chooses for `body` (a chat body), counted as a decision,
  // or `model` itself when it names no policy. A collection.omni is
  // kUnsupportedOperation. Sessions call it once, when they are created.
  Result<std::string> session_model(const std::string& model, const nlohmann::json& body,
                                    const std::function<bool()>& gone);
  // refuse_model() (caller.h), counted as the key's refusal for `model`
  // (lemonade_key_refusals_total): what every route that names a model
  // asks before it does anything with it.
  std::optional<Error> refuse_model(const ApiKey* key, std::string_view model);

 private:
  // The key, routing policy, images, preset and defaults of the request,
  // before anything loads: the error to answer, or nullopt. `gone`: the
  // client left (a classifier's calls stop).
  std::optional<Error> prepare(InferenceRequest& req, const std::function<bool()>& gone);
  // The routing policy or omni collection `req.model` names, if any.
  std::optional<Error> route_collection(InferenceRequest& req, const std::function<bool()>& gone);
  // The forwarding itself; the backend's figures when it succeeded.
  // known_model turns false when the name is not in the catalogue.
  std::optional<RequestStats> forward_to(InferenceRequest& req, net::ResponseWriter& w,
                                         bool& known_model);
  // One try of forward_to: acquire a lease (kept in `lease`), forward, and
  // return a retryable failure unwritten.
  ProxyOutcome forward_attempt(InferenceRequest& req, net::ResponseWriter& w,
                               const WaitHooks& hooks, bool& known_model, bool sanitized,
                               std::optional<Lease>& lease);
  ProxyCall make_call(const InferenceRequest& req, std::string path,
                      std::string content_type) const;
  // --max-prefill-tokens: kPromptTooLong when the backend counts more
  // tokens in the request's prompt.
  Status check_prefill_limit(const InferenceRequest& req, WrappedServer& server) const;
  // Long prompts: the backend's "still working" test, and for a
  // stream its heartbeat and llama-server's prompt progress (asked for in
  // `body`, rewritten into `owned_body`, and stripped unless the client
  // asked for it too).
  void watch_long_prompt(const InferenceRequest& req, WrappedServer& server,
                         std::string& owned_body, std::string_view& body, ProxyCall& call);
  // A remote model's request (remote_forward.cpp): its endpoints in the
  // order its policy and their health give; one that does not answer (or
  // answers 401, 403, 502, 503 or 504) before anything of the answer
  // reached the client is left for the next, and nothing that reached the
  // client is ever sent again.
  // False (nothing written) when `req.model` is not, or no longer, a remote
  // model; `stats` gets the figures of one that succeeded.
  bool forward_remote(InferenceRequest& req, net::ResponseWriter& w, bool& known_model,
                      std::optional<RequestStats>& stats);
  // Until `server`'s process has ended (at most 2 s, or the client leaves).
  static void wait_for_exit(const WrappedServer& server, const WaitHooks& hooks);
  // Sleeps `delay` before a retry; false when the client left meanwhile.
  static bool wait_before_retry(std::chrono::milliseconds delay, const WaitHooks& hooks);

  mutable Mutex settings_mu_;
  ForwardSettings settings_ LEMON_GUARDED_BY(settings_mu_);
  ModelProvisioner& provisioner_;
  const GenerationDefaults& defaults_;
  StatsStore& stats_;
  telemetry::TelemetryHub& hub_;
  const std::atomic<bool>& drain_expired_;
  std::atomic<std::uint64_t> next_request_id_{1};
  mutable Mutex streams_mu_;
  std::map<std::string, int> streams_ LEMON_GUARDED_BY(streams_mu_);
  remote::RemoteModels* remote_ = nullptr;
  PolicyRouting* policies_ = nullptr;
};

}  // namespace lemon::inference
