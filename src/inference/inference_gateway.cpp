#include "lemon/inference/inference_gateway.h"
#include "lemon/inference/backend_form.h"

#include "lemon/http/caller.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "lemon/core/log.h"
#include "lemon/http/error_response.h"
#include "lemon/http/multipart.h"
#include "lemon/http/observed_writer.h"
#include "lemon/inference/message_repair.h"
#include "lemon/inference/route_stamp.h"
#include "lemon/inference/translating_writer.h"

namespace lemon::inference {

using http::ApiKey;
using http::StreamFraming;

using http::write_error;
namespace {

// Retries of a request whose backend did not answer (seed 003: 1, 2, 4 s).
constexpr int kBackendRetries = 3;

}  // namespace

int InferenceGateway::open_streams(const std::string& model) const {
  MutexLock lock(streams_mu_);
  auto it = streams_.find(model);
  return it == streams_.end() ? 0 : it->second;
}

ForwardSettings InferenceGateway::settings() const {
  MutexLock lock(settings_mu_);
  return settings_;
}

void InferenceGateway::set_settings(const ForwardSettings& settings) {
  MutexLock lock(settings_mu_);
  settings_ = settings;
}

InferenceGateway::InferenceGateway(const ForwardSettings& settings, ModelProvisioner& provisioner,
                                   const GenerationDefaults& defaults, StatsStore& stats,
                                   telemetry::TelemetryHub& hub,
                                   const std::atomic<bool>& drain_expired)
    : settings_(settings),
      provisioner_(provisioner),
      defaults_(defaults),
      stats_(stats),
      hub_(hub),
      drain_expired_(drain_expired) {}

std::optional<Error> InferenceGateway::refuse_model(const ApiKey* key, std::string_view model) {
  auto refused = http::refuse_model(key, model);
  if (refused) {
    hub_.count_key_refusal(key->name, "model");
  }
  return refused;
}

std::optional<Error> InferenceGateway::prepare(InferenceRequest& req,
                                               const std::function<bool()>& gone) {
  // A key's model list names what clients ask for (a preset as preset.ID, a
  // routing policy by its name: its candidates come with it), in any form of
  // the model's name.
  if (auto refused = http::refuse_model(req.key, req.model)) {
    auto internal = provisioner_.internal_name(req.model);
    if (!internal || http::refuse_model(req.key, *internal)) {
      hub_.count_key_refusal(req.key->name, "model");
      return refused;
    }
  }
  if (policies_ != nullptr) {
    if (auto refused = route_collection(req, gone)) {
      return refused;
    }
  }
  if (!req.images_field.empty() && !provisioner_.takes_images(req.model)) {
    return Error(
        ErrorCode::kInvalidRequest,
        "model '" + req.model + "' cannot take images: it has no 'vision' label or mmproj file",
        req.images_field);
  }
  // A preset's own values come before the /params defaults.
  const std::string asked = req.model;
  auto preset = provisioner_.apply_preset(req.model, req.json, req.route);
  if (!preset.ok()) {
    return std::move(preset).error();
  }
  if (req.model != asked && req.requested_model.empty()) {
    req.requested_model = asked;
  }
  req.body_changed = preset->body_changed || req.body_changed;
  if (!preset->preset.empty()) {
    hub_.count_preset_enforced(preset->preset, preset->enforced.overridden,
                               preset->enforced.stripped);
  }
  if (req.json != nullptr &&
      (req.route == ApiRoute::kChatCompletions || req.route == ApiRoute::kCompletions)) {
    req.body_changed = defaults_.apply(*req.json) || req.body_changed;
  }
  return std::nullopt;
}

void InferenceGateway::forward(InferenceRequest& req, net::ResponseWriter& raw) {
  const auto started = http::ObservedWriter::Clock::now();
  req.id = next_request_id_.fetch_add(1, std::memory_order_relaxed);
  http::ObservedWriter w(raw);
  if (auto refused = prepare(req, [&w] { return !w.client_connected(); })) {
    write_error(w, *refused, framing_for(req.route));
    return;
  }
  bool known_model = true;
  std::optional<RequestStats> figures;
  if (!req.routed) {
    figures = forward_to(req, w, known_model);
  } else if (req.translating != nullptr) {
    req.translating->add_answer_header(kRouteHeader, req.routed->header);
    figures = forward_to(req, w, known_model);
  } else {
    RouteStampWriter stamped(w, req.routed->header, req.routed->object);
    figures = forward_to(req, stamped, known_model);
  }
  if (!known_model || w.status() == 0) {
    return;  // an unknown name gets no series of its own (a client could make endless ones)
  }
  telemetry::RequestRecord record;
  record.id = req.id;
  record.model = req.model;
  record.route = api_route_name(req.route);
  record.status = w.status();
  record.stream = req.stream;
  record.key = req.key != nullptr ? req.key->name : std::string();
  if (req.routed) {
    record.routed_by = req.routed->policy;
    record.route_rule = req.routed->header;
  }
  record.duration_s =
      std::chrono::duration<double>(http::ObservedWriter::Clock::now() - started).count();
  if (figures) {
    record.ttft_s = figures->time_to_first_token;
    record.prompt_tokens = figures->prompt_tokens;
    record.completion_tokens = figures->output_tokens;
    record.tokens_per_second = figures->tokens_per_second;
    record.draft_tokens = figures->draft_tokens;
    record.draft_accepted_tokens = figures->draft_accepted_tokens;
  }
  hub_.record_request(record);
}

void InferenceGateway::record_session_turn(const ApiKey* key, const std::string& model, bool stream,
                                           double duration_s, const RequestStats& figures) {
  telemetry::RequestRecord record;
  record.id = next_request_id_.fetch_add(1, std::memory_order_relaxed);
  record.model = model;
  record.route = "sessions";
  record.status = 200;
  record.stream = stream;
  record.key = key != nullptr ? key->name : std::string();
  record.duration_s = duration_s;
  record.ttft_s = figures.time_to_first_token;
  record.prompt_tokens = figures.prompt_tokens;
  record.completion_tokens = figures.output_tokens;
  record.tokens_per_second = figures.tokens_per_second;
  record.draft_tokens = figures.draft_tokens;
  record.draft_accepted_tokens = figures.draft_accepted_tokens;
  hub_.record_request(record);
}

std::optional<RequestStats> InferenceGateway::forward_to(InferenceRequest& req,
                                                         net::ResponseWriter& w,
                                                         bool& known_model) {
  const ForwardSettings limits = settings();
  WaitHooks hooks;
  hooks.tick_interval = limits.keepalive_interval;
  hooks.cancelled = [&w] { return !w.client_connected(); };
  if (req.stream) {
    // Keep a streaming client informed while its model loads.
    hooks.on_tick = [&w] {
      if (!w.headers_sent()) {
        w.begin_chunked(200, net::Headers{{"Content-Type", "text/event-stream"},
                                          {"Cache-Control", "no-cache"},
                                          {"X-Accel-Buffering", "no"}});
      }
      w.write_chunk(": loading\n\n");
    };
  }
  // A backend that refused or reset the connection before
  // answering is tried again after 1, 2 and 4 s (--backend-retry-delay),
  // within --request-timeout; a chat its template rejected is repaired and
  // tried once more. Each attempt takes a new lease, so a backend that died
  // meanwhile is loaded again.
  const auto started = std::chrono::steady_clock::now();
  int retries = 0;
  bool sanitized = false;
  bool resent_after_crash = false;
  for (;;) {
    std::optional<Lease> lease;
    auto outcome = forward_attempt(req, w, hooks, known_model, sanitized, lease);
    if (outcome.remote) {  // a remote model the router named
      std::optional<RequestStats> figures;
      if (!forward_remote(req, w, known_model, figures)) {
        known_model = false;
        write_error(w, provisioner_.model_not_found(req.model), framing_for(req.route));
      }
      return figures;
    }
    if (!outcome.unanswered) {
      return outcome.stats;
    }
    const UnansweredFailure& failure = *outcome.unanswered;
    if (failure.kind == UnansweredFailure::Kind::kUnreachable &&
        failure.error.code() == ErrorCode::kBackendCrashed && !resent_after_crash &&
        lease.has_value()) {
      // The backend died under a non-streaming request before answering:
      // once, the model is loaded again (the next lease) and the request
      // sent again; a chat or completion has no effect a second try repeats.
      resent_after_crash = true;
      logger("http")->warn(
          "backend of '{}' died before answering ({}); loading it again and "
          "sending the request once more",
          req.model, failure.error.message());
      wait_for_exit(lease->server(), hooks);
      lease.reset();
      continue;
    }
    if (failure.kind == UnansweredFailure::Kind::kUnreachable &&
        failure.error.code() == ErrorCode::kBackendUnavailable) {
      const auto delay = limits.backend_retry_delay * (1 << retries);
      const bool in_time =
          limits.request_timeout.count() == 0 ||
          std::chrono::steady_clock::now() - started + delay < limits.request_timeout;
      if (retries < kBackendRetries && delay.count() > 0 && in_time) {
        logger("http")->warn("backend of '{}' did not answer ({}); retrying in {} ms", req.model,
                             failure.error.message(), delay.count());
        lease.reset();
        ++retries;
        if (!wait_before_retry(delay, hooks)) {
          return std::nullopt;  // the client left
        }
        continue;
      }
    } else if (failure.rejection == BackendRejection::kTemplate && !sanitized &&
               req.route == ApiRoute::kChatCompletions && req.json != nullptr &&
               req.json->contains("messages")) {
      const MessageRepair repair = repair_chat_messages((*req.json)["messages"]);
      if (repair.changed()) {
        logger("http")->warn("'{}' rejected the chat's shape; retrying with repaired messages ({})",
                             req.model, repair.describe());
        sanitized = true;
        req.body_changed = true;
        continue;
      }
    }
    ProxyCall call = make_call(req, "", "");
    write_unanswered(w, lease->model_name(), call, failure);
    return std::nullopt;
  }
}

namespace {

// Chat and completions: the routes whose prompt a backend reads before it
// answers, and that llama-server reports progress on.
bool reads_a_prompt(ApiRoute route) {
  return route == ApiRoute::kChatCompletions || route == ApiRoute::kCompletions;
}

bool client_asked_progress(const nlohmann::json& body) {
  auto it = body.find("return_progress");
  return it != body.end() && it->is_boolean() && it->get<bool>();
}

// How often a request's prefill progress becomes a `request` event.
constexpr std::chrono::milliseconds kProgressEventPace{500};

}  // namespace

Status InferenceGateway::check_prefill_limit(const InferenceRequest& req,
                                             WrappedServer& server) const {
  const long long max_prefill_tokens = settings().max_prefill_tokens;
  if (max_prefill_tokens <= 0 || req.json == nullptr || !reads_a_prompt(req.route)) {
    return ok_status();
  }
  auto tokens = server.count_prompt_tokens(req.route, *req.json);
  if (!tokens) {
    logger("http")->warn(
        "--max-prefill-tokens: '{}' could not count the prompt's tokens; "
        "the request goes on",
        req.model);
    return ok_status();
  }
  if (*tokens <= max_prefill_tokens) {
    return ok_status();
  }
  return Error(ErrorCode::kPromptTooLong,
               "the prompt has " + std::to_string(*tokens) + " tokens, more than " +
                   "--max-prefill-tokens (" + std::to_string(max_prefill_tokens) + ") allows",
               req.route == ApiRoute::kChatCompletions ? "messages" : "prompt");
}

void InferenceGateway::watch_long_prompt(const InferenceRequest& req, WrappedServer& server,
                                         std::string& owned_body, std::string_view& body,
                                         ProxyCall& call) {
  // A silent backend that says it is working is not idle; a
  // stream hears a heartbeat while the backend reads its prompt, and its
  // backend is asked how far it got.
  call.still_working = [&server] { return server.reports_work_in_progress(); };
  if (!req.stream) {
    return;
  }
  call.heartbeat = settings().stream_heartbeat;
  if (req.json == nullptr || !reads_a_prompt(req.route) || !server.reports_prompt_progress() ||
      !req.native_path.empty()) {
    return;  // (llama-server's own stream format is passed on as it is)
  }
  const bool client_asked = client_asked_progress(*req.json);
  if (!client_asked && !hub_.events().wants_request_events()) {
    // Progress only feeds request events: with nobody following them, the
    // backend is not asked for it (fewer events for llama-server
    // to write and the router to read and drop; a silent prefill stays
    // alive through ProxyCall::still_working).
    return;
  }
  if (!client_asked) {
    if (auto asked = with_return_progress(body)) {
      owned_body = std::move(*asked);
      body = owned_body;
      call.strip_progress = true;
    }
  }
  call.on_progress = [this, last_event = std::chrono::steady_clock::time_point{}, id = req.id,
                      model = req.model,
                      route = api_route_name(req.route)](const PromptProgress& p) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (p.processed < p.total && now - last_event < kProgressEventPace) {
      return;
    }
    last_event = now;
    hub_.on_prefill_progress({id, model, route, p.processed, p.total});
  };
}

StreamFraming framing_for(ApiRoute route) {
  return route == ApiRoute::kResponses ? StreamFraming::kResponses
                                       : StreamFraming::kChatCompletions;
}

ProxyCall InferenceGateway::make_call(const InferenceRequest& req, std::string path,
                                      std::string content_type) const {
  ProxyCall call = limited_call(std::move(path), std::move(content_type), req.stream);
  call.framing = framing_for(req.route);
  call.add_done = req.native_path.empty();
  call.transform = req.transform;
  call.answer_content_type = req.answer_content_type;
  return call;
}

ProxyCall InferenceGateway::limited_call(std::string path, std::string content_type,
                                         bool stream) const {
  ProxyCall call;
  call.path = std::move(path);
  call.content_type = std::move(content_type);
  call.stream = stream;
  const ForwardSettings limits = settings();
  call.max_response_bytes = limits.max_response_bytes;
  call.request_timeout = limits.request_timeout;
  call.stream_idle_timeout = limits.stream_idle_timeout;
  call.backend_idle_timeout = limits.backend_idle_timeout;
  call.drain_expired = &drain_expired_;
  return call;
}

void InferenceGateway::wait_for_exit(const WrappedServer& server, const WaitHooks& hooks) {
  // The router sees the process end through its pidfd within milliseconds;
  // a backend that closed the connection yet lives on is left after 2 s.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!server.exited() && std::chrono::steady_clock::now() < until &&
         !(hooks.cancelled && hooks.cancelled())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool InferenceGateway::wait_before_retry(std::chrono::milliseconds delay, const WaitHooks& hooks) {
  // Polls the client (and sends a streaming client its keepalives) while it
  // waits; nothing else waits on this thread.
  const auto until = std::chrono::steady_clock::now() + delay;
  auto next_tick = std::chrono::steady_clock::now() + hooks.tick_interval;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) {
      return true;
    }
    if (hooks.cancelled && hooks.cancelled()) {
      return false;
    }
    if (hooks.on_tick && now >= next_tick) {
      hooks.on_tick();
      next_tick += hooks.tick_interval;
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(50)));
  }
}

ProxyOutcome InferenceGateway::forward_attempt(InferenceRequest& req, net::ResponseWriter& w,
                                               const WaitHooks& hooks, bool& known_model,
                                               bool sanitized, std::optional<Lease>& lease) {
  // llama-server's autoload: off, a model that is not loaded or loading
  // is an error instead of a load.
  if (!req.autoload.value_or(!settings().no_models_autoload) &&
      provisioner_.needs_load(req.model)) {
    write_error(w,
                Error(ErrorCode::kModelNotLoaded,
                      "model '" + req.model +
                          "' is not loaded, and autoload is off (--no-models-autoload or "
                          "?autoload=false); load it first (POST /models/load) or ask with "
                          "?autoload=true",
                      "model"),
                framing_for(req.route));
    return {};
  }
  auto got =
      provisioner_.acquire(req.model, hooks, model_type_for_route(req.route), req.keep_alive);
  if (!got.ok()) {
    if (got.error().code() == ErrorCode::kServedRemotely && remote_ != nullptr) {
      ProxyOutcome remote;
      remote.remote = true;
      return remote;
    }
    if (got.error().code() == ErrorCode::kModelNotFound) {
      known_model = false;
      write_error(w, provisioner_.model_not_found(req.model), framing_for(req.route));
    } else if (got.error().code() != ErrorCode::kCancelled) {
      write_error(w, got.error(), framing_for(req.route));
    }
    return {};
  }
  lease.emplace(std::move(got).value());
  WrappedServer& server = lease->server();
  if (req.json != nullptr &&
      (req.route == ApiRoute::kChatCompletions || req.route == ApiRoute::kCompletions)) {
    if (lease->backend_slot() >= 0) {
      // Some of this server's slots hold sessions' contexts: use a free one
      // of the others.
      (*req.json)["id_slot"] = lease->backend_slot();
      req.body_changed = true;
    } else if (req.json->contains("id_slot") && req.slot_set_by_router) {
      req.json->erase("id_slot");  // a slot chosen for an earlier attempt
    }
    req.slot_set_by_router = lease->backend_slot() >= 0;
  }
  auto path = server.upstream_path(req.route);
  if (!req.native_path.empty()) {
    // llama-server's own routes exist only there.
    path = server.model().recipe == "llamacpp" ? std::optional<std::string>(req.native_path)
                                               : std::nullopt;
  }
  if (!path) {
    write_error(
        w,
        Error(ErrorCode::kUnsupportedOperation,
              (req.native_path.empty() ? std::string(api_route_name(req.route)) : req.native_path) +
                  " is not supported by recipe '" + server.model().recipe + "'",
              "model"),
        framing_for(req.route));
    return {};
  }
  std::string owned_body;
  std::string_view body = req.raw_body;
  std::string content_type = req.content_type;
  if (req.form != nullptr) {
    if (auto checked = server.check_form(req.route, *req.form); !checked.ok()) {
      write_error(w, checked.error(), framing_for(req.route));
      return {};
    }
    if (auto form = server.rewrite_form(req.route, *req.form)) {
      const std::string boundary = make_boundary(*form);
      owned_body = write_multipart(*form, boundary);
      body = owned_body;
      content_type = "multipart/form-data; boundary=" + boundary;
    }
  } else if (req.json != nullptr) {
    if (auto custom = server.rewrite_body(req.route, *req.json)) {
      owned_body = std::move(*custom);
      body = owned_body;
    } else if (req.body_changed) {
      owned_body = req.json->dump();
      body = owned_body;
    }
  }
  if (auto refused = check_prefill_limit(req, server); !refused.ok()) {
    write_error(w, refused.error(), framing_for(req.route));
    return {};
  }
  ProxyCall call = make_call(req, *path, content_type);
  call.refusal = [&server, route = req.route](std::string_view answer) {
    return server.refusal_in_answer(route, answer);
  };
  watch_long_prompt(req, server, owned_body, body, call);
  call.body = body;
  call.defer_retryable = true;
  // A whole answer reaches the client only at its end: a backend that died
  // before its first byte left nothing behind, so the request may be sent
  // again (forward_to()). A stream that began is not.
  call.defer_lost = !req.stream;
  if (sanitized) {
    call.extra_headers.add("X-Lemonade-Sanitized", "1");
  }
  struct Streaming {  // counted while the backend's stream is forwarded
    InferenceGateway& gateway;
    std::string model;
    Streaming(InferenceGateway& g, std::string m) : gateway(g), model(std::move(m)) {
      MutexLock lock(gateway.streams_mu_);
      ++gateway.streams_[model];
    }
    ~Streaming() {
      MutexLock lock(gateway.streams_mu_);
      if (--gateway.streams_[model] == 0) {
        gateway.streams_.erase(model);
      }
    }
    Streaming(const Streaming&) = delete;
    Streaming& operator=(const Streaming&) = delete;
  };
  std::optional<Streaming> streaming;
  if (req.stream) {
    streaming.emplace(*this, lease->model_name());
  }
  auto outcome = forward_to_backend(*lease, call, w, stats_);
  if (outcome.unanswered && sanitized) {
    // The repaired chat failed too: the backend's error is the answer.
    write_unanswered(w, lease->model_name(), call, *outcome.unanswered);
    return {};
  }
  return outcome;
}

}  // namespace lemon::inference
