// SessionApi: multi-turn sessions (seed 002) under sessions/:
// POST sessions (create, pinned to one llama.cpp slot of one server), GET
// sessions and sessions/{id}, DELETE sessions/{id}, and POST
// sessions/{id}/messages, /generate and /cancel. Each turn is sent to the
// session's server and slot with `id_slot` and `cache_prompt`, so the
// backend evaluates only what the turn added. Owns the SessionTable.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once; idle sessions end on the table's
// reaper thread.
#pragma once

#include <memory>
#include <string>

#include "lemon/api/lemonade/lemonade_settings.h"
#include "lemon/http/api_routes.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/net/server.h"
#include "lemon/router/router.h"
#include "lemon/sessions/session_table.h"
#include "lemon/telemetry/event_bus.h"
#include "lemon/telemetry/request_stats.h"

namespace lemon::api {

class SessionApi {
 public:
  // `events` gets session_moved.
  SessionApi(Router& router, inference::InferenceGateway& gateway, StatsStore& stats,
             telemetry::EventBus& events, const LemonadeSettings& settings);
  ~SessionApi();  // stops the reaper first: no session ends after this
  SessionApi(const SessionApi&) = delete;
  SessionApi& operator=(const SessionApi&) = delete;

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_create(net::Request& r, net::ResponseWriter& w);
  // With API keys, a session belongs to the key that made it (an admin key
  // reaches every one): another key gets session_not_found, and a key whose
  // model list lost the session's model gets 403.
  std::optional<Error> refuse_session(const net::Request& r, const std::string& id);
  bool visible_to(const net::Request& r, const SessionState& s) const;
  void handle_message(const std::string& id, net::Request& r, net::ResponseWriter& w);
  void handle_generate(const std::string& id, net::Request& r, net::ResponseWriter& w);
  // A session whose server is gone continues: its model loads
  // again if needed (restoring its saved slots) and the session moves to a
  // free slot of it; the turn sends the whole history as every turn does.
  Result<Lease> move_and_acquire(const std::string& id, const std::string& model,
                                 const WaitHooks& hooks);
  // The model's servers that take sessions now, and the claim of a slot on
  // one (Router::pin_backend_slot), for SessionTable's create and move.
  std::vector<PinnableServer> pinnable_servers(const std::string& model) const;
  bool reserve_pin(const SessionPin& pin);
  // Erases the session's llama.cpp slot (its cached context) on its server.
  void erase_slot(const SessionState& s);

  Router& router_;
  inference::InferenceGateway& gateway_;
  StatsStore& stats_;
  telemetry::EventBus& events_;
  const LemonadeSettings& settings_;
  std::unique_ptr<SessionTable> sessions_;
};

}  // namespace lemon::api
