// ApiServer: the HTTP server every API room (src/api/*) registers into. It
// owns the listeners (the main port, --ollama-port's and --websocket-port's),
// the route table
// with each route's access check and the graceful drain's count of requests
// in flight. It serves no route of its own and hands nothing out: the rooms
// are given what they use by whoever builds them (src/app/main.cpp).
//
// A request's route is matched once, when its head arrives (the HeadCheck),
// and its caller judged there: the API key, its scope and limits, the origin
// and Host. The handler then runs the route found then.
//
// Thread-safety: construct, register the rooms, then bind()/run() from the
// main thread; stop() from any thread; handlers run on connection threads.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lemon/http/access_policy.h"
#include "lemon/http/api_dialect.h"
#include "lemon/http/api_keys.h"
#include "lemon/http/api_routes.h"
#include "lemon/http/audit_log.h"
#include "lemon/http/key_limits.h"
#include "lemon/http/route_table.h"
#include "lemon/http/serving_status.h"
#include "lemon/net/server.h"
#include "lemon/telemetry/telemetry_hub.h"

namespace lemon::http {

// Everything the router's HTTP server runs with (the inference path's
// limits are inference::ForwardSettings).
struct ApiSettings {
  std::string host = "127.0.0.1";
  int port = 8000;
  net::ServerOptions server;
  AccessSettings access;
  // --ollama-port: the same routes on a second listener, where GET / answers
  // "Ollama is running" as Ollama's clients expect (0: any free port).
  std::optional<int> ollama_port;
  // --websocket-port: the WebSocket routes (json_socket.h) on a second
  // listener as well, for clients that read /health's websocket_port
  // (0: any free port; nullopt: none, and /health names the main port).
  std::optional<int> websocket_port;
  // The API keys (api_keys.h); set_keys() replaces them while it runs.
  KeyRing keys;
  // The audit log of admin actions (audit_log.h); "" for none.
  std::string audit_log_file;
};

class ApiServer final : public ApiRoutes, public ServingStatus {
 public:
  // `hub` outlives the server: it counts the keys' requests and refusals,
  // and its event and log streams end when the server stops.
  ApiServer(ApiSettings settings, telemetry::TelemetryHub& hub);
  ~ApiServer() override;

  // Binds the port, and the Ollama and WebSocket ports when they are set.
  Result<int> bind();
  // The Ollama listener's port once bound, else nullopt.
  std::optional<int> ollama_port() const { return bound_ollama_port_; }
  // The WebSocket listener's port once bound, else nullopt.
  std::optional<int> bound_websocket_port() const { return bound_websocket_port_; }
  void run();
  // Begins a graceful shutdown: stops accepting; requests already in a
  // handler go on, new ones on open connections get 503. run() returns once
  // the last in-flight request ends. Any thread; never blocks.
  void stop();
  // Requests in a handler right now (the drain waits for 0).
  int in_flight() const { return in_flight_.load(); }
  // The drain ran out: requests whose backend is then stopped are told the
  // router is shutting down rather than that their backend failed
  // (drain_expired(), which the inference path reads).
  void expire_drain() { drain_expired_.store(true); }
  const std::atomic<bool>& drain_expired() const { return drain_expired_; }

  // ServingStatus.
  bool draining() const override { return stopping_.load(); }
  int open_connections() const override;
  int open_streams() const override { return open_streams_.load(); }
  std::optional<int> websocket_port() const override;
  // WebSockets open now, on every listener.
  int open_websockets() const;

  // ApiRoutes: the API rooms (src/api/*) add their routes before run().
  void route(const std::string& method, const std::string& suffix, RouteAccess access, Scope scope,
             Handler handler, ApiDialect dialect = ApiDialect::kLemonade) override;
  void root(const std::string& method, const std::string& path, RouteAccess access, Scope scope,
            Handler handler, ApiDialect dialect = ApiDialect::kLemonade) override;
  void not_implemented(const std::string& path, std::string why, ApiDialect dialect) override;
  void websocket(const std::string& suffix, SocketRoute route) override;
  // Every route, as "METHOD path" (each API prefix once, "/api/v1/..."),
  // and the scope it needs: what docs/auth.md's table and its test read.
  std::vector<std::pair<std::string, Scope>> route_scopes() const override;

  // The API keys now in force, and their replacement (a configuration
  // reload): requests already admitted keep the keys they were checked with.
  std::shared_ptr<const KeyRing> keys() const;
  // A configuration reload: takes from `settings` the keys, the origins
  // allowed to call from a browser (--cors-origins) and the audit log's
  // file ("" for none), all replaced at once (a request sees the old set or
  // the new one); the rest waits for a restart.
  void reconfigure(const ApiSettings& settings);

 private:
  // Every request: CORS headers, OPTIONS preflight, then the route table.
  void handle(net::Request& r, net::ResponseWriter& w);
  // The server's HeadCheck: the route and access (API key and its scope and
  // limits, origin, Host, media type) checked before any of the body is read
  //; the caller is left in r.context (caller.h).
  std::optional<net::EarlyAnswer> check_head(net::Request& r);
  // Metrics and the audit line of a refused request.
  void count_refusal(const net::Request& r, Scope scope, KeyHeaders headers, const Error& error,
                     const std::shared_ptr<const KeyRing>& ring);
  // The audit line of a request to an admin route, once answered or refused.
  void audit(const net::Request& r, const std::string& key, int status);
  // `handler` behind the access check of a request no HeadCheck judged.
  Handler checked(RouteAccess access, Scope scope, ApiDialect dialect, Handler handler);
  // The HeadCheck's part for a WebSocket route: the handshake, the
  // subprotocol, then access as check_access() judges it, except that no
  // key at all leaves the caller to authenticate in-band.
  std::optional<Error> check_socket_head(const net::Request& r, Scope scope,
                                         const AccessSettings& settings, const KeyRing* ring,
                                         const ApiKey*& key, bool& pending);
  // Answers an upgrade on a WebSocket route: the room's handler behind the
  // gate (socket_gate.h), then 101.
  void open_socket(const std::shared_ptr<const SocketRoute>& route, net::Request& r,
                   net::ResponseWriter& w);

  std::atomic<int> in_flight_{0};
  std::atomic<int> open_streams_{0};
  std::atomic<bool> drain_expired_{false};
  std::atomic<bool> stopping_{false};
  ApiSettings settings_;
  telemetry::TelemetryHub& hub_;
  RouteTable routes_;
  mutable Mutex keys_mu_;
  // What a request is checked against, replaced whole by set_keys() and
  // set_cors_origins(): a request keeps the one it was checked with.
  struct AccessState {
    AccessSettings settings;
    KeyRing keys;
  };
  std::shared_ptr<const AccessState> access() const;
  std::shared_ptr<const AccessState> access_ LEMON_GUARDED_BY(keys_mu_);
  KeyLimiter limiter_;
  std::shared_ptr<AuditLog> audit_ LEMON_GUARDED_BY(keys_mu_);
  std::vector<std::pair<std::string, Scope>> registered_;  // route_scopes()
  std::unique_ptr<net::Server> server_;
  // --ollama-port's listener, run on its own thread by run().
  std::unique_ptr<net::Server> ollama_server_;
  std::optional<int> bound_ollama_port_;
  // --websocket-port's listener: WebSocket upgrades only.
  std::unique_ptr<net::Server> websocket_server_;
  std::optional<int> bound_websocket_port_;
  std::optional<int> bound_port_;
};

}  // namespace lemon::http
