#include "lemon/http/api_server.h"

#include <thread>

#include "cors_writer.h"
#include "lemon/core/log.h"
#include "lemon/http/error_response.h"
#include "lemon/http/inference_proxy.h"
#include "observed_writer.h"

namespace lemon::http {
namespace {

// A route's tag in the route table: its RouteAccess and its ApiDialect.
int route_tag(RouteAccess access, ApiDialect dialect) {
  return static_cast<int>(access) | (static_cast<int>(dialect) << 8);
}
RouteAccess tag_access(int tag) {
  return static_cast<RouteAccess>(tag & 0xff);
}
ApiDialect tag_dialect(int tag) {
  return static_cast<ApiDialect>(tag >> 8);
}
KeyHeaders key_headers(ApiDialect dialect) {
  return dialect == ApiDialect::kAnthropic ? KeyHeaders::kBearerOrXApiKey : KeyHeaders::kBearer;
}

}  // namespace

ApiServer::ApiServer(ApiSettings settings, ModelCatalogue& catalogue,
                     const PresetCatalogue& presets, ModelStore& store, BackendInstaller& installer,
                     Router& router, StatsStore& stats, telemetry::TelemetryHub& hub)
    : settings_(std::move(settings)),
      hub_(hub),
      provisioner_(catalogue, presets, store, installer, router, settings_.cli_options),
      gateway_(settings_, provisioner_, stats, hub, drain_expired_) {
  settings_.server.head_check = [this](const net::Request& r) { return check_head(r); };
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
  bind_access_to(settings_.access, settings_.host, *port, more);
  return port;
}

void ApiServer::run() {
  std::thread ollama;
  if (ollama_server_ && bound_ollama_port_) {
    ollama = std::thread([this] { ollama_server_->run(); });
  }
  server_->run();
  if (ollama.joinable()) {
    ollama_server_->stop();
    ollama.join();
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
}

int ApiServer::open_connections() const {
  return (server_ ? server_->open_connections() : 0) +
         (ollama_server_ ? ollama_server_->open_connections() : 0);
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
  CorsWriter w(counted, cors_headers(r, settings_.access));
  if (r.method == "OPTIONS") {
    // CORS preflight: never needs the key (browsers do not send it here).
    if (auto denied = check_access(r, settings_.access, RouteAccess::kPublic)) {
      write_error(w, *denied);
      return;
    }
    w.send(204, net::Headers{{"Allow", "GET, POST, PUT, DELETE, OPTIONS"}}, "");
    return;
  }
  routes_.dispatch(r, w);
}

std::optional<net::EarlyAnswer> ApiServer::check_head(const net::Request& r) const {
  if (r.method == "OPTIONS") {
    return std::nullopt;  // CORS preflight, answered by handle()
  }
  auto m = routes_.match(r.method, r.path);
  net::EarlyAnswer answer;
  if (m.handler == nullptr) {
    answer = RouteTable::refusal(m, r);
    if (m.status == 405 && tag_dialect(m.tag) != ApiDialect::kLemonade) {
      // A wrong method on an Anthropic or Ollama route, in that API's shape.
      answer.body = dialect_error_body(
          tag_dialect(m.tag), 405, r.method + " is not allowed on " + r.path + "; use " + m.allow);
    }
  } else if (auto denied = check_access(r, settings_.access, tag_access(m.tag),
                                        key_headers(tag_dialect(m.tag)))) {
    DialectError e = dialect_error(tag_dialect(m.tag), *denied);
    answer.status = e.status;
    answer.headers = std::move(e.headers);
    answer.body = std::move(e.body);
  } else {
    return std::nullopt;
  }
  const net::Headers cors = cors_headers(r, settings_.access);
  for (const auto& [name, value] : cors.fields()) {
    answer.headers.add(name, value);
  }
  return answer;
}

void ApiServer::route(const std::string& method, const std::string& suffix, RouteAccess access,
                      Handler handler, ApiDialect dialect) {
  routes_.add_api(
      method, suffix,
      [this, access, dialect, handler = std::move(handler)](net::Request& r, net::ResponseWriter& w,
                                                            std::string_view param) {
        if (auto denied = check_access(r, settings_.access, access, key_headers(dialect))) {
          DialectError e = dialect_error(dialect, *denied);
          w.send(e.status, e.headers, e.body);
          return;
        }
        handler(r, w, param);
      },
      route_tag(access, dialect));
}

void ApiServer::root(const std::string& method, const std::string& path, RouteAccess access,
                     Handler handler, ApiDialect dialect) {
  routes_.add_root(
      method, path,
      [this, access, dialect, handler = std::move(handler)](net::Request& r, net::ResponseWriter& w,
                                                            std::string_view param) {
        if (auto denied = check_access(r, settings_.access, access, key_headers(dialect))) {
          DialectError e = dialect_error(dialect, *denied);
          w.send(e.status, e.headers, e.body);
          return;
        }
        handler(r, w, param);
      },
      route_tag(access, dialect));
}

}  // namespace lemon::http
