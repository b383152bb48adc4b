#include "lemon/http/api_server.h"

#include <thread>

#include "api_server_detail.h"
#include "cors_writer.h"
#include "lemon/core/clock.h"
#include "lemon/core/error_envelope.h"
#include "lemon/core/log.h"
#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/observed_writer.h"

namespace lemon::http {
namespace {

std::int64_t steady_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The model an admin request names, for its audit line.
std::string audited_model(const net::Request& r) {
  if (r.body.empty() || r.body.size() > (1u << 20) || r.media_type() != "application/json") {
    return {};
  }
  auto body = nlohmann::json::parse(r.body, nullptr, false);
  if (!body.is_object()) {
    return {};
  }
  for (const char* field : {"model_name", "model", "name"}) {
    if (auto it = body.find(field); it != body.end() && it->is_string()) {
      return it->get<std::string>();
    }
  }
  return {};
}
KeyHeaders key_headers(ApiDialect dialect) {
  return dialect == ApiDialect::kAnthropic ? KeyHeaders::kBearerOrXApiKey : KeyHeaders::kBearer;
}

}  // namespace

ApiServer::ApiServer(ApiSettings settings, telemetry::TelemetryHub& hub)
    : settings_(std::move(settings)), hub_(hub) {
  settings_.server.head_check = [this](net::Request& r) { return check_head(r); };
  access_ =
      std::make_shared<const AccessState>(AccessState{settings_.access, std::move(settings_.keys)});
  settings_.keys = KeyRing();
  if (!settings_.audit_log_file.empty()) {
    MutexLock lock(keys_mu_);
    audit_ = std::make_shared<AuditLog>(settings_.audit_log_file);
  }
  server_ = std::make_unique<net::Server>(
      settings_.server, [this](net::Request& r, net::ResponseWriter& w) { handle(r, w); });
  if (settings_.ollama_port) {
    // Ollama's clients probe GET / for "Ollama is running"; the rest is the
    // same table as the main port.
    ollama_server_ = std::make_unique<net::Server>(
        settings_.server, [this](net::Request& r, net::ResponseWriter& w) {
          if (r.path == "/" && (r.method == "GET" || r.method == "HEAD")) {
            w.send(200, net::Headers{{"Content-Type", "text/plain; charset=utf-8"}},
                   "Ollama is running");
            return;
          }
          handle(r, w);
        });
  }
  if (settings_.websocket_port) {
    net::ServerOptions options = settings_.server;
    options.head_check = [this](net::Request& r) -> std::optional<net::EarlyAnswer> {
      if (!net::is_websocket_upgrade(r) || !routes_.match(r.method, r.path, true).websocket) {
        return websocket_port_refusal(r);
      }
      return check_head(r);
    };
    websocket_server_ = std::make_unique<net::Server>(
        options, [this](net::Request& r, net::ResponseWriter& w) { handle(r, w); });
  }
}

ApiServer::~ApiServer() {
  stop();
}

Result<int> ApiServer::bind() {
  auto port = server_->bind(settings_.host, settings_.port);
  if (!port.ok()) {
    return port;
  }
  std::vector<int> more;
  if (ollama_server_) {
    auto ollama = ollama_server_->bind(settings_.host, *settings_.ollama_port);
    if (!ollama.ok()) {
      return Error(ollama.error().code(), "--ollama-port " +
                                              std::to_string(*settings_.ollama_port) + ": " +
                                              ollama.error().message());
    }
    bound_ollama_port_ = *ollama;
    more.push_back(*ollama);
  }
  if (websocket_server_) {
    auto socket_port = websocket_server_->bind(settings_.host, *settings_.websocket_port);
    if (!socket_port.ok()) {
      return Error(socket_port.error().code(), "--websocket-port " +
                                                   std::to_string(*settings_.websocket_port) +
                                                   ": " + socket_port.error().message());
    }
    bound_websocket_port_ = *socket_port;
    more.push_back(*socket_port);
  }
  bound_port_ = *port;
  {
    MutexLock lock(keys_mu_);
    auto bound = std::make_shared<AccessState>(*access_);
    bind_access_to(bound->settings, settings_.host, *port, more);
    access_ = std::move(bound);
  }
  return port;
}

void ApiServer::run() {
  std::thread ollama;
  if (ollama_server_ && bound_ollama_port_) {
    ollama = std::thread([this] { ollama_server_->run(); });
  }
  std::thread sockets;
  if (websocket_server_ && bound_websocket_port_) {
    sockets = std::thread([this] { websocket_server_->run(); });
  }
  server_->run();
  if (ollama.joinable()) {
    ollama_server_->stop();
    ollama.join();
  }
  if (sockets.joinable()) {
    websocket_server_->stop();
    sockets.join();
  }
}

void ApiServer::stop() {
  stopping_.store(true);
  // Event and log streams would never end by themselves: close them, so the
  // drain waits only for real work.
  hub_.events().close();
  hub_.logs().close();
  if (server_) {
    server_->stop();
  }
  if (ollama_server_) {
    ollama_server_->stop();
  }
  if (websocket_server_) {
    websocket_server_->stop();
  }
}

int ApiServer::open_connections() const {
  return (server_ ? server_->open_connections() : 0) +
         (ollama_server_ ? ollama_server_->open_connections() : 0) +
         (websocket_server_ ? websocket_server_->open_connections() : 0);
}

int ApiServer::open_websockets() const {
  return (server_ ? server_->open_websockets() : 0) +
         (ollama_server_ ? ollama_server_->open_websockets() : 0) +
         (websocket_server_ ? websocket_server_->open_websockets() : 0);
}

std::optional<int> ApiServer::websocket_port() const {
  return bound_websocket_port_ ? bound_websocket_port_ : bound_port_;
}

void ApiServer::handle(net::Request& r, net::ResponseWriter& raw) {
  struct InFlight {
    std::atomic<int>& count;
    explicit InFlight(std::atomic<int>& c) : count(c) { ++count; }
    ~InFlight() { --count; }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
  } in_flight(in_flight_);
  ObservedWriter counted(raw, &open_streams_);
  const auto state = access();
  CorsWriter w(counted, cors_headers(r, state->settings));
  if (r.method == "OPTIONS") {
    // CORS preflight: never needs the key (browsers do not send it here).
    if (auto denied = check_access(r, state->settings, RouteAccess::kPublic)) {
      write_error(w, *denied);
      return;
    }
    w.send(204, net::Headers{{"Allow", "GET, POST, PUT, DELETE, OPTIONS"}}, "");
    return;
  }
  if (const auto* caller = dynamic_cast<const Caller*>(r.context.get());
      caller != nullptr && caller->scope == Scope::kAdmin) {
    // The audit line is written before the client can see the answer, so
    // the log's order is the order clients saw.
    std::string key = caller->key != nullptr ? caller->key->name : std::string();
    counted.on_status([this, &r, key = std::move(key)](int status) { audit(r, key, status); });
  }
  // The key's lease ends as the answer ends, before the client can send its
  // next request (and, at the latest, when the handler returns).
  if (auto* caller = dynamic_cast<Caller*>(r.context.get()); caller != nullptr && caller->key) {
    counted.before_end([caller] { caller->lease = KeyLimiter::Lease(); });
  }
  routes_.dispatch(r, w);
  r.context.reset();  // the key's lease ends with the answer
}

std::shared_ptr<const ApiServer::AccessState> ApiServer::access() const {
  MutexLock lock(keys_mu_);
  return access_;
}

std::shared_ptr<const KeyRing> ApiServer::keys() const {
  auto state = access();
  return {state, &state->keys};  // shares the state's life
}

void ApiServer::reconfigure(const ApiSettings& settings) {
  const std::string& audit_log_file = settings.audit_log_file;
  std::shared_ptr<AuditLog> log;
  {
    MutexLock lock(keys_mu_);
    log = audit_;
  }
  if (audit_log_file.empty()) {
    log.reset();
  } else if (!log || log->file() != audit_log_file) {
    log = std::make_shared<AuditLog>(audit_log_file);  // outside the lock requests take
  }
  MutexLock lock(keys_mu_);
  auto next = std::make_shared<AccessState>(*access_);
  next->keys = settings.keys;
  next->settings.cors_origins = settings.access.cors_origins;
  access_ = std::move(next);
  audit_ = std::move(log);
}

std::vector<std::pair<std::string, Scope>> ApiServer::route_scopes() const {
  return registered_;
}

void ApiServer::audit(const net::Request& r, const std::string& key, int status) {
  std::shared_ptr<AuditLog> log;
  {
    MutexLock lock(keys_mu_);
    log = audit_;
  }
  if (!log) {
    return;
  }
  log->record({{"time", unix_ms_now()},
               {"key", key},
               {"method", r.method},
               {"path", r.path},
               {"model", audited_model(r)},
               {"status", status},
               {"remote_addr", r.remote_addr}});
}

void ApiServer::count_refusal(const net::Request& r, Scope scope, KeyHeaders headers,
                              const Error& error, const std::shared_ptr<const KeyRing>& ring) {
  if (error.code() != ErrorCode::kUnauthorized && error.code() != ErrorCode::kForbidden &&
      error.code() != ErrorCode::kRateLimited) {
    return;
  }
  std::string key;
  std::optional<std::string> presented;
  if (headers == KeyHeaders::kWebSocket) {
    presented = socket_key(r);
  } else if (auto bearer = presented_key(r, headers)) {
    presented = std::string(*bearer);
  }
  if (presented && ring) {
    if (const ApiKey* found = ring->find(*presented)) {
      key = found->name;
    }
  }
  const char* reason = error.code() == ErrorCode::kUnauthorized  ? "key"
                       : error.code() == ErrorCode::kRateLimited ? "limit"
                                                                 : "scope";
  if (error.code() == ErrorCode::kForbidden && key.empty()) {
    return;  // Host or Origin: no key was judged
  }
  hub_.count_key_refusal(key.empty() ? "unknown" : key, reason);
  if (scope == Scope::kAdmin) {
    audit(r, key, error_shape(error.code()).status);
  }
}

std::optional<net::EarlyAnswer> ApiServer::check_head(net::Request& r) {
  if (r.method == "OPTIONS") {
    return std::nullopt;  // CORS preflight, answered by handle()
  }
  auto m = routes_.match(r.method, r.path, net::is_websocket_upgrade(r));
  net::EarlyAnswer answer;
  if (m.handler == nullptr) {
    answer = RouteTable::refusal(m, r);
    if (m.status != 404 && tag_dialect(m.tag) != ApiDialect::kLemonade) {
      // A wrong or unimplemented method, or an unimplemented route, of the
      // Anthropic or Ollama API, in that API's shape.
      answer.body = dialect_error_body(tag_dialect(m.tag), m.status,
                                       RouteTable::refusal_error(m, r).message());
    }
  } else {
    RouteTable::remember(m, r);
    const Scope scope = tag_scope(m.tag);
    const KeyHeaders headers =
        m.websocket ? KeyHeaders::kWebSocket : key_headers(tag_dialect(m.tag));
    const auto state = access();
    std::shared_ptr<const KeyRing> ring(state, &state->keys);
    const ApiKey* key = nullptr;
    bool pending = false;
    std::optional<Error> denied =
        m.websocket
            ? check_socket_head(r, scope, state->settings, ring.get(), key, pending)
            : check_access(r, state->settings, tag_access(m.tag), headers, ring.get(), scope, &key);
    if (!denied && key == nullptr && scope != Scope::kAdmin && !m.websocket) {
      // No key judged and nothing to audit: one shared, immutable context
      // (no allocation on the request path).
      static const auto kNobody = std::make_shared<Caller>();
      r.context = kNobody;
      return std::nullopt;
    }
    auto caller = std::make_shared<Caller>();
    if (!denied && key != nullptr) {
      auto lease = limiter_.admit(*key, steady_ms_now());
      if (lease.ok()) {
        caller->lease = std::move(*lease);
        hub_.count_key_request(key->name, scope_name(scope));
      } else {
        denied = std::move(lease).error();
      }
    }
    if (!denied) {
      caller->ring = std::move(ring);
      caller->key = key;
      caller->scope = scope;
      caller->pending_auth = pending;
      r.context = std::move(caller);
      return std::nullopt;
    }
    count_refusal(r, scope, headers, *denied, ring);
    DialectError e = dialect_error(tag_dialect(m.tag), *denied);
    answer.status = e.status;
    answer.headers = std::move(e.headers);
    answer.body = std::move(e.body);
    if (denied->code() == ErrorCode::kUpgradeRequired) {
      answer.headers.add("Sec-WebSocket-Version", "13");  // RFC 6455 4.4
    }
  }
  const net::Headers cors = cors_headers(r, access()->settings);
  for (const auto& [name, value] : cors.fields()) {
    answer.headers.add(name, value);
  }
  return answer;
}

ApiRoutes::Handler ApiServer::checked(RouteAccess access, Scope scope, ApiDialect dialect,
                                      Handler handler) {
  return [this, access, scope, dialect, handler = std::move(handler)](
             net::Request& r, net::ResponseWriter& w, std::string_view param) {
    // The HeadCheck has judged the caller of every request the server read
    // (a request that reached here some other way is judged now, without
    // limits); the body's type is known only now.
    std::optional<Error> denied;
    if (r.context == nullptr) {
      const auto state = this->access();
      denied = check_access(r, state->settings, access, key_headers(dialect), &state->keys, scope);
    } else {
      denied = check_media_type(r, access);
    }
    if (denied) {
      DialectError e = dialect_error(dialect, *denied);
      w.send(e.status, e.headers, e.body);
      return;
    }
    handler(r, w, param);
  };
}

void ApiServer::route(const std::string& method, const std::string& suffix, RouteAccess access,
                      Scope scope, Handler handler, ApiDialect dialect) {
  registered_.emplace_back(method + " " + RouteTable::api_prefixes().front() + suffix, scope);
  routes_.add_api(method, suffix, checked(access, scope, dialect, std::move(handler)),
                  route_tag(access, dialect, scope));
}

void ApiServer::root(const std::string& method, const std::string& path, RouteAccess access,
                     Scope scope, Handler handler, ApiDialect dialect) {
  registered_.emplace_back(method + " " + path, scope);
  routes_.add_root(method, path, checked(access, scope, dialect, std::move(handler)),
                   route_tag(access, dialect, scope));
}

void ApiServer::not_implemented(const std::string& path, std::string why, ApiDialect dialect) {
  routes_.add_not_implemented(path, std::move(why),
                              route_tag(RouteAccess::kPublic, dialect, Scope::kPublic));
}

}  // namespace lemon::http
