#include "lemon/api/lemonade/session_api.h"

#include <algorithm>
#include <chrono>

#include "lemon/core/log.h"
#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/sessions/session_journal.h"
#include "session_turn.h"

namespace lemon::api {

using inference::ProxyCall;

namespace {

nlohmann::json session_json(const SessionState& s, bool with_history) {
  nlohmann::json j = {
      {"id", s.id},
      {"object", "session"},
      {"model", s.model},
      {"system", s.system.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.system)},
      {"options", s.options},
      {"state", s.generating ? "generating" : "idle"},
      {"turns", s.turns},
      {"messages", s.history.size()},
      {"slot", s.pin.backend_slot},
      {"tokens",
       {{"prompt", s.prompt_tokens},
        {"cached", s.cached_tokens},
        {"completion", s.completion_tokens}}},
      {"moves", s.moves},
      {"resumed", s.resumed.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.resumed)},
      {"created", static_cast<double>(s.created_ms) / 1000.0},
      {"last_use", static_cast<double>(s.last_used_ms) / 1000.0}};
  if (with_history) {
    j["history"] = s.history;
  }
  return j;
}

// The sampling fields a session's options may hold (sent with every turn).
constexpr const char* kSessionOptions[] = {"temperature",
                                           "top_p",
                                           "top_k",
                                           "min_p",
                                           "repeat_penalty",
                                           "seed",
                                           "stop",
                                           "presence_penalty",
                                           "frequency_penalty",
                                           "chat_template_kwargs",
                                           "reasoning_format"};

Result<nlohmann::json> session_options(const nlohmann::json& body) {
  auto it = body.find("options");
  if (it == body.end() || it->is_null()) {
    return nlohmann::json::object();
  }
  if (!it->is_object()) {
    return Error(ErrorCode::kInvalidRequest, "'options' must be an object", "options");
  }
  for (const auto& item : it->items()) {
    const std::string& key = item.key();
    const bool known = std::any_of(std::begin(kSessionOptions), std::end(kSessionOptions),
                                   [&](const char* k) { return key == k; });
    if (!known) {
      return Error(ErrorCode::kInvalidRequest,
                   "'options." + key +
                       "' is not a session option (temperature, top_p, top_k, min_p, "
                       "repeat_penalty, seed, stop, presence_penalty, frequency_penalty, "
                       "chat_template_kwargs, reasoning_format)",
                   "options");
    }
  }
  return *it;
}

}  // namespace

SessionApi::SessionApi(Router& router, inference::InferenceGateway& gateway, StatsStore& stats,
                       telemetry::EventBus& events, const LemonadeSettings& settings)
    : router_(router), gateway_(gateway), stats_(stats), events_(events), settings_(settings) {
  std::shared_ptr<SessionLog> journal;
  if (!settings_.session_journal_dir.empty()) {
    journal = std::make_shared<SessionJournal>(
        settings_.session_journal_dir,
        [this](const std::string& id, const std::string& why, const std::filesystem::path& kept) {
          events_.publish("session_journal_malformed",
                          {{"id", id}, {"reason", why}, {"kept_as", kept.string()}});
        });
  }
  sessions_ = std::make_unique<SessionTable>(
      settings_.session_ttl,
      [this](const SessionState& s) {
        logger("http")->info("session {} on '{}' ended after {} s idle", s.id, s.model,
                             settings_.session_ttl.count() / 1000);
        erase_slot(s);
      },
      std::move(journal));
}

SessionApi::~SessionApi() {
  sessions_.reset();
}

void SessionApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  routes.route("POST", "sessions", RouteAccess::kJsonPost, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_create(r, w); });
  routes.route("GET", "sessions", RouteAccess::kRead, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P) {
                 nlohmann::json data = nlohmann::json::array();
                 for (const auto& s : sessions_->list()) {
                   if (visible_to(r, s)) {
                     data.push_back(session_json(s, false));
                   }
                 }
                 send_json(w, 200, {{"object", "list"}, {"data", std::move(data)}});
               });
  // sessions/{id}, sessions/{id}/messages, /generate, /cancel.
  routes.route("GET", "sessions/{id}", RouteAccess::kRead, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P id) {
                 if (auto refused = refuse_session(r, std::string(id))) {
                   write_error(w, *refused);
                   return;
                 }
                 auto s = sessions_->get(std::string(id));
                 if (wrote_error(w, s)) {
                   return;
                 }
                 send_json(w, 200, session_json(*s, true));
               });
  routes.route("DELETE", "sessions/{id}", RouteAccess::kRead, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P id) {
                 if (auto refused = refuse_session(r, std::string(id))) {
                   write_error(w, *refused);
                   return;
                 }
                 auto s = sessions_->remove(std::string(id));
                 if (wrote_error(w, s)) {
                   return;
                 }
                 erase_slot(*s);
                 send_json(w, 200, {{"id", s->id}, {"object", "session"}, {"deleted", true}});
               });
  routes.route("POST", "sessions/{id}", RouteAccess::kJsonPost, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P rest) {
                 const auto slash = rest.find('/');
                 const std::string id(rest.substr(0, slash));
                 const std::string_view action =
                     slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
                 if (auto refused = refuse_session(r, id)) {
                   write_error(w, *refused);
                   return;
                 }
                 if (action == "messages" || action == "generate") {
                   // The key's model list may have changed since it made the
                   // session; reading, cancelling and deleting stay allowed.
                   auto s = sessions_->get(id);
                   if (auto refused = s.ok() ? gateway_.refuse_model(http::caller_key(r), s->model)
                                             : std::nullopt) {
                     write_error(w, *refused);
                     return;
                   }
                 }
                 if (action == "messages") {
                   handle_message(id, r, w);
                 } else if (action == "generate") {
                   handle_generate(id, r, w);
                 } else if (action == "cancel") {
                   auto cancelled = sessions_->cancel(id);
                   if (wrote_error(w, cancelled)) {
                     return;
                   }
                   send_json(w, 200, {{"id", id}, {"cancelled", *cancelled}});
                 } else {
                   write_error(w, Error(ErrorCode::kRouteNotFound,
                                        "no route POST sessions/{id}/" + std::string(action) +
                                            " (messages, generate, cancel)"));
                 }
               });
}

bool SessionApi::visible_to(const net::Request& r, const SessionState& s) const {
  const http::ApiKey* key = http::caller_key(r);
  return key == nullptr || key->has(Scope::kAdmin) || s.owner == key->name;
}

std::optional<Error> SessionApi::refuse_session(const net::Request& r, const std::string& id) {
  const http::ApiKey* key = http::caller_key(r);
  if (key == nullptr) {
    return std::nullopt;
  }
  auto s = sessions_->get(id);
  if (!s.ok()) {
    return std::nullopt;  // the route answers its own session_not_found
  }
  if (!visible_to(r, *s)) {
    // As the table says it of a session that does not exist: another key's
    // sessions are not revealed.
    return Error(ErrorCode::kSessionNotFound,
                 "no session '" + id + "' (it never existed, was deleted, or expired)", "id");
  }
  return std::nullopt;
}

void SessionApi::handle_create(net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto model = string_field(*body, "model", true);
  auto system = string_field(*body, "system", false);
  auto options = session_options(*body);
  if (!model.ok() || !system.ok() || !options.ok()) {
    write_error(w, !model.ok() ? model.error() : !system.ok() ? system.error() : options.error());
    return;
  }
  if (auto refused = gateway_.refuse_model(http::caller_key(r), *model)) {
    write_error(w, *refused);
    return;
  }
  // A session that names a routing policy is routed once, now, and keeps
  // the model chosen for all its turns: the route reads its system text as
  // the user's and the body's metadata.
  const std::string asked = *model;
  nlohmann::json route_body = {{"messages", {{{"role", "user"}, {"content", *system}}}}};
  if (auto metadata = body->find("metadata"); metadata != body->end()) {
    route_body["metadata"] = *metadata;
  }
  model = gateway_.session_model(asked, route_body, [&w] { return !w.client_connected(); });
  if (wrote_error(w, model)) {
    return;
  }
  // Load the model (or find it loaded) the way a chat request would.
  WaitHooks hooks;
  hooks.tick_interval = gateway_.settings().keepalive_interval;
  hooks.cancelled = [&w] { return !w.client_connected(); };
  {
    auto lease = router_.acquire(*model, hooks, ModelType::kLlm);
    if (!lease.ok()) {
      if (lease.error().code() != ErrorCode::kCancelled) {
        write_error(w, lease.error());
      }
      return;
    }
    if (lease->server().model().recipe != "llamacpp") {
      write_error(w, Error(ErrorCode::kUnsupportedOperation,
                           "sessions keep their context in a llama.cpp slot; model '" + *model +
                               "' runs on recipe '" + lease->server().model().recipe + "'",
                           "model"));
      return;
    }
  }
  const std::string name = *model;
  // The slot is reserved on its server in the step that creates the
  // session, so the pool never sees a session without its pin (a replica
  // with sessions is not scaled down or unloaded by keep-alive).
  auto created = sessions_->create(
      *model, *system, std::move(*options), [this, &name] { return pinnable_servers(name); },
      SessionTable::Clock::now() + settings_.session_wait, [&w] { return !w.client_connected(); },
      [this](const SessionPin& pin) { return reserve_pin(pin); },
      http::caller_key(r) != nullptr ? http::caller_key(r)->name : std::string());
  if (!created.ok()) {
    if (created.error().code() != ErrorCode::kCancelled) {
      write_error(w, created.error());
    }
    return;
  }
  logger("http")->info("session {} on '{}' (server {}, slot {})", created->id, created->model,
                       created->pin.server_id, created->pin.backend_slot);
  nlohmann::json answer = session_json(*created, false);
  if (asked != created->model) {
    answer["routed_by"] = asked;
  }
  send_json(w, 200, answer);
}

void SessionApi::handle_message(const std::string& id, net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto role = string_field(*body, "role", true);
  auto content = string_field(*body, "content", true);
  if (!role.ok() || !content.ok()) {
    write_error(w, !role.ok() ? role.error() : content.error());
    return;
  }
  if (*role != "user" && *role != "assistant" && *role != "system" && *role != "tool") {
    write_error(w, Error(ErrorCode::kInvalidRequest,
                         "'role' must be user, assistant, system or tool", "role"));
    return;
  }
  auto appended = sessions_->append(id, {{"role", *role}, {"content", *content}});
  if (wrote_error(w, appended)) {
    return;
  }
  send_json(w, 200, session_json(*appended, false));
}

void SessionApi::handle_generate(const std::string& id, net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body.empty() ? std::string_view("{}") : r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto stream = bool_field(*body, "stream", false);
  if (wrote_error(w, stream)) {
    return;
  }
  std::optional<int> max_tokens;
  if (auto it = body->find("max_tokens"); it != body->end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 ||
        it->get<std::int64_t>() > 1'000'000) {
      write_error(w, Error(ErrorCode::kInvalidRequest, "'max_tokens' must be a positive integer",
                           "max_tokens"));
      return;
    }
    max_tokens = it->get<int>();
  }
  auto turn = sessions_->begin_turn(id);
  if (wrote_error(w, turn)) {
    return;
  }
  const SessionState& s = turn->state;
  // The history grows only when the turn succeeds; every answer below is
  // written after the turn has ended.
  TurnEnd turn_end(*sessions_, id);
  if (s.history.empty()) {
    turn_end.end(std::nullopt);
    write_error(w, Error(ErrorCode::kInvalidRequest,
                         "the session has no messages yet: POST sessions/{id}/messages first"));
    return;
  }
  nlohmann::json messages = nlohmann::json::array();
  if (!s.system.empty()) {
    messages.push_back({{"role", "system"}, {"content", s.system}});
  }
  for (const auto& m : s.history) {
    messages.push_back(m);
  }
  nlohmann::json upstream = s.options;
  upstream["model"] = s.model;
  upstream["messages"] = std::move(messages);
  upstream["stream"] = *stream;
  upstream["id_slot"] = s.pin.backend_slot;
  upstream["cache_prompt"] = true;
  if (max_tokens) {
    upstream["max_tokens"] = *max_tokens;
  }
  if (auto fake = body->find("lemon_fake"); fake != body->end()) {
    upstream["lemon_fake"] = *fake;  // the fake backend's knobs, for tests
  }

  const auto cancel = turn->cancel;
  const auto started = std::chrono::steady_clock::now();
  WaitHooks hooks;
  hooks.tick_interval = std::chrono::milliseconds(100);
  hooks.cancelled = [&w, cancel] { return cancel->load() || !w.client_connected(); };
  auto lease = router_.acquire_server(s.pin.server_id, s.pin.backend_slot, hooks);
  const bool moved = !lease.ok() && lease.error().code() == ErrorCode::kSessionLost;
  if (moved) {
    lease = move_and_acquire(id, s.model, hooks);
    if (lease.ok()) {
      upstream["id_slot"] = lease->backend_slot();
    }
  }
  const std::string text = upstream.dump();
  if (!lease.ok()) {
    turn_end.end(std::nullopt);
    if (lease.error().code() != ErrorCode::kCancelled || cancel->load()) {
      write_error(w, lease.error().code() == ErrorCode::kCancelled
                         ? Error(ErrorCode::kCancelled, "the turn was cancelled")
                         : lease.error());
    }
    return;
  }
  TurnRecorder recorder(w, [&, moved](const std::optional<TurnResult>& result) {
    turn_end.end(result);
    if (moved && result) {
      // Its saved slot was restored when the model loaded if this turn
      // reused cached tokens; otherwise it was computed from the history.
      const bool restored = result->cached_tokens > 0;
      sessions_->note_resumed(id, restored);
      logger("http")->info("session {} continued on another server ({})", id,
                           restored ? "its slot was restored" : "recomputed from its history");
      events_.publish("session_resumed", {{"id", id},
                                          {"model", s.model},
                                          {"how", restored ? "restored" : "recomputed"},
                                          {"cached_tokens", result->cached_tokens}});
    }
  });
  ProxyCall call = gateway_.limited_call("/v1/chat/completions", "application/json", *stream);
  call.body = text;
  call.cancelled = [cancel] { return cancel->load(); };
  const auto outcome = inference::forward_to_backend(*lease, call, recorder, stats_);
  lease->release();
  if (outcome.stats) {
    // Its tokens count for the model and for the caller's key.
    gateway_.record_session_turn(
        http::caller_key(r), s.model, *stream,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
        *outcome.stats);
  }
  turn_end.end(std::nullopt);  // no effect when the recorder ended it
  if (!recorder.completed() && cancel->load()) {
    // Cancelled by POST sessions/{id}/cancel (or DELETE): end the answer
    // cleanly; the history stays as it was before this turn.
    if (w.headers_sent()) {
      w.write_chunk("data: " + json_text({{"id", id}, {"cancelled", true}}) + "\n\n");
      w.write_chunk("data: [DONE]\n\n");
      w.finish();
    } else {
      send_json(w, 200, {{"id", id}, {"cancelled", true}});
    }
  }
}

std::vector<PinnableServer> SessionApi::pinnable_servers(const std::string& model) const {
  std::vector<PinnableServer> out;
  for (const auto& s : router_.loaded()) {
    if (s.model_name == model && !s.draining) {
      out.push_back({s.server_id, std::max(s.slots, 1)});
    }
  }
  return out;
}

bool SessionApi::reserve_pin(const SessionPin& pin) {
  return router_.pin_backend_slot(pin.server_id, pin.backend_slot);
}

Result<Lease> SessionApi::move_and_acquire(const std::string& id, const std::string& model,
                                           const WaitHooks& hooks) {
  // Loaded again if it must be; its saved slots are restored as it loads.
  auto loaded = router_.acquire(model, hooks, ModelType::kLlm);
  if (!loaded.ok()) {
    return std::move(loaded).error();
  }
  loaded->release();
  auto pin = sessions_->move_to_free_slot(
      id, [this, &model] { return pinnable_servers(model); },
      [this](const SessionPin& chosen) { return reserve_pin(chosen); });
  if (!pin.ok()) {
    return std::move(pin).error();
  }
  logger("http")->info("session {}: its server is gone; moved to server {}, slot {}", id,
                       pin->server_id, pin->backend_slot);
  return router_.acquire_server(pin->server_id, pin->backend_slot, hooks);
}

void SessionApi::erase_slot(const SessionState& s) {
  // Erased while still pinned (no request without a session can be on it),
  // then unpinned. Best effort: a server that is gone took the cache along.
  WaitHooks hooks;
  hooks.tick_interval = std::chrono::milliseconds(100);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  hooks.cancelled = [deadline] { return std::chrono::steady_clock::now() >= deadline; };
  auto lease = router_.acquire_server(s.pin.server_id, s.pin.backend_slot, hooks);
  if (lease.ok()) {
    net::UpstreamRequest req;
    req.path = "/slots/" + std::to_string(s.pin.backend_slot) + "?action=erase";
    req.content_type = "application/json";
    req.body = "{}";
    net::CallOptions opts;
    opts.total_timeout = std::chrono::seconds(5);
    auto resp = lease->server().client().send(req, opts);
    if (!resp.ok() || resp->status != 200) {
      logger("http")->debug("session {}: slot {} not erased", s.id, s.pin.backend_slot);
    }
    lease->release();
  }
  router_.unpin_backend_slot(s.pin.server_id, s.pin.backend_slot);
}

}  // namespace lemon::api
