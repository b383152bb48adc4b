// ApiServer: the HTTP surface of lemonade-router. It owns the HTTP server and
// the route table, and turns each request into calls on the catalogue, the
// router and the stats store. Handlers are thin: parse and check the body,
// then one router call, then one response writer.
//
// Thread-safety: bind()/run() from the main thread; stop() from any thread;
// handlers run on connection threads.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lemon/backends/backend_installer.h"
#include "lemon/backends/wrapped_server.h"
#include "lemon/core/mutex.h"
#include "lemon/http/access_policy.h"
#include "lemon/http/api_dialect.h"
#include "lemon/http/api_routes.h"
#include "lemon/http/generation_defaults.h"
#include "lemon/http/inference_gateway.h"
#include "lemon/http/inference_proxy.h"
#include "lemon/http/model_provisioner.h"
#include "lemon/http/route_table.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/model_store.h"
#include "lemon/models/preset_catalogue.h"
#include "lemon/net/server.h"
#include "lemon/router/request_stats.h"
#include "lemon/router/router.h"
#include "lemon/router/session_table.h"
#include "lemon/telemetry/context_monitor.h"
#include "lemon/telemetry/system_stats.h"
#include "lemon/telemetry/telemetry_hub.h"

namespace lemon::http {

// Everything the router serves over HTTP; the forwarding settings are
// ForwardSettings (inference_gateway.h).
struct ApiSettings : ForwardSettings {
  std::string host = "127.0.0.1";
  int port = 8000;
  net::ServerOptions server;
  AccessSettings access;
  std::string cache_dir;      // for /system-info's backend lookup
  RecipeOptions cli_options;  // for /system-info's default backends
  std::string web_dir;        // the dashboard's files (resources/web); "" serves none
  // --ollama-port: the same routes on a second listener, where GET / answers
  // "Ollama is running" as Ollama's clients expect (0: any free port).
  std::optional<int> ollama_port;
  // Sessions (issue #13 §4): idle ones end after session_ttl; a new one
  // waits up to session_wait for a free slot.
  std::chrono::milliseconds session_ttl{30 * 60 * 1000};
  std::chrono::milliseconds session_wait{60 * 1000};
};

// What the router observes of itself (issue #12): metrics, events, logs,
// context use and system figures. Owned by main; outlive the ApiServer.
struct Observers {
  telemetry::TelemetryHub& hub;
  telemetry::ContextMonitor& context;
  telemetry::SystemStatsReader& system;
};

// Follows a download or install task for a /pull or /install request: with
// `stream`, Lemonade's SSE events (progress, then complete or error);
// otherwise `success` as JSON once it ends, or the error envelope.
void respond_when_done(net::ResponseWriter& w, bool stream,
                       const std::function<Status(download::FollowHooks&)>& follow,
                       const nlohmann::json& success);

class ApiServer final : public ApiRoutes {
 public:
  ApiServer(ApiSettings settings, ModelCatalogue& catalogue, PresetCatalogue& presets,
            ModelStore& store, BackendInstaller& installer, Router& router, StatsStore& stats,
            Observers observers);
  ~ApiServer();

  // Binds the port, and the Ollama port when one is set.
  Result<int> bind();
  // The Ollama listener's port once bound, else nullopt.
  std::optional<int> ollama_port() const { return bound_ollama_port_; }
  void run();
  // Begins a graceful shutdown: stops accepting; requests already in a
  // handler go on, new ones on open connections get 503. run() returns once
  // the last in-flight request ends. Any thread; never blocks.
  void stop();
  // Requests in a handler right now (the drain waits for 0).
  int in_flight() const { return in_flight_.load(); }
  // The drain ran out: requests whose backend is then stopped are told the
  // router is shutting down rather than that their backend failed.
  void expire_drain() { drain_expired_.store(true); }
  // Streaming responses being written now (inference, pulls, events, logs).
  int open_streams() const { return open_streams_.load(); }
  int open_connections() const;

  // ApiRoutes: the API rooms (src/api/*) add their routes before run().
  void route(const std::string& method, const std::string& suffix, RouteAccess access,
             Handler handler, ApiDialect dialect = ApiDialect::kLemonade) override;
  void root(const std::string& method, const std::string& path, RouteAccess access, Handler handler,
            ApiDialect dialect = ApiDialect::kLemonade) override;
  // What the rooms share with the server's own routes.
  ModelProvisioner& provisioner() { return provisioner_; }
  InferenceGateway& gateway() { return gateway_; }
  const GenerationDefaults& generation_defaults() const { return params_; }

 private:
  void register_routes();
  // kModelNotFound for `name`, naming a few models that are available.
  Error model_not_found(std::string_view name) const;
  // Every request: CORS headers, OPTIONS preflight, then the route table.
  void handle(net::Request& r, net::ResponseWriter& w);
  std::atomic<int> in_flight_{0};
  std::atomic<int> open_streams_{0};
  std::atomic<bool> drain_expired_{false};
  std::atomic<bool> stopping_{false};
  // The server's HeadCheck: the route and access (API key, origin, Host,
  // media type) checked before any of the body is read (issue #11 §3a).
  std::optional<net::EarlyAnswer> check_head(const net::Request& r) const;
  // Sessions (handlers_sessions.cpp, issue #13 §4).
  void register_session_routes();
  void handle_session_create(net::Request& r, net::ResponseWriter& w);
  void handle_session_message(const std::string& id, net::Request& r, net::ResponseWriter& w);
  void handle_session_generate(const std::string& id, net::Request& r, net::ResponseWriter& w);
  // Erases the session's llama.cpp slot (its cached context) on its server.
  void erase_session_slot(const SessionState& s);

  // Presets (handlers_presets.cpp, issue #14 §1).
  void register_preset_routes();
  void handle_presets(net::ResponseWriter& w);
  void handle_preset(std::string_view id, net::ResponseWriter& w);
  void handle_preset_create(net::Request& r, net::ResponseWriter& w);
  void handle_preset_replace(std::string_view id, net::Request& r, net::ResponseWriter& w);
  void handle_preset_delete(std::string_view id, net::ResponseWriter& w);
  // POST /load {"preset": id}.
  void handle_load_preset(const nlohmann::json& body, net::ResponseWriter& w);

  // Management (handlers_management.cpp).
  void handle_health(net::ResponseWriter& w);
  void handle_live(net::ResponseWriter& w);
  void handle_stats(net::ResponseWriter& w);
  void handle_models(net::Request& r, net::ResponseWriter& w);
  void handle_model(std::string_view id, net::ResponseWriter& w);
  void handle_load(net::Request& r, net::ResponseWriter& w);
  void handle_unload(net::Request& r, net::ResponseWriter& w);
  void handle_system_info(net::ResponseWriter& w);
  void handle_ready(net::ResponseWriter& w);

  // Observability (handlers_observe.cpp).
  void handle_metrics(net::ResponseWriter& w);
  void handle_events(net::Request& r, net::ResponseWriter& w);
  void handle_logs_stream(net::Request& r, net::ResponseWriter& w);
  void handle_system_stats(net::ResponseWriter& w);
  void handle_log_level(net::Request& r, net::ResponseWriter& w);
  void handle_params(net::Request& r, net::ResponseWriter& w);
  void handle_shutdown(net::ResponseWriter& w);
  // Writes `follower`'s items as SSE until the client leaves, the follower
  // is dropped (too slow) or closed (shutdown); `frame` turns an item into
  // its SSE text ("" skips it); a comment heartbeat keeps quiet streams alive.
  template <typename Follower, typename Frame>
  void stream_follower(net::ResponseWriter& w, Follower& follower, const Frame& frame);

  // The dashboard (handlers_web.cpp): GET / and /web/<file> from web_dir.
  void handle_web(std::string_view file, net::ResponseWriter& w);

  // Model store (handlers_store.cpp).
  void handle_pull(net::Request& r, net::ResponseWriter& w);
  void handle_delete(net::Request& r, net::ResponseWriter& w);

  // Backends (handlers_backends.cpp).
  void handle_install(net::Request& r, net::ResponseWriter& w);
  void handle_uninstall(net::Request& r, net::ResponseWriter& w);

  ApiSettings settings_;
  ModelCatalogue& catalogue_;
  PresetCatalogue& presets_;
  ModelStore& store_;
  BackendInstaller& installer_;
  Router& router_;
  StatsStore& stats_;
  Observers observers_;
  // Every handler that serves a model by name asks it (issue #28 §2).
  ModelProvisioner provisioner_;
  InferenceGateway gateway_;
  GenerationDefaults params_;
  RouteTable routes_;
  std::unique_ptr<SessionTable> sessions_;
  std::unique_ptr<net::Server> server_;
  // --ollama-port's listener, run on its own thread by run().
  std::unique_ptr<net::Server> ollama_server_;
  std::optional<int> bound_ollama_port_;
};

}  // namespace lemon::http
