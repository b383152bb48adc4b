#include "lemon/http/api_server.h"

#include "cors_writer.h"
#include "lemon/core/log.h"
#include "lemon/http/error_response.h"
#include "lemon/http/inference_proxy.h"

namespace lemon::http {

ApiServer::ApiServer(ApiSettings settings, ModelCatalogue& catalogue, ModelStore& store,
                     BackendInstaller& installer, Router& router, StatsStore& stats)
    : settings_(std::move(settings)),
      catalogue_(catalogue),
      store_(store),
      installer_(installer),
      router_(router),
      stats_(stats) {
  register_routes();
  settings_.server.head_check = [this](const net::Request& r) { return check_head(r); };
  server_ = std::make_unique<net::Server>(
      settings_.server, [this](net::Request& r, net::ResponseWriter& w) { handle(r, w); });
}

ApiServer::~ApiServer() {
  stop();
}

Result<int> ApiServer::bind() {
  auto port = server_->bind(settings_.host, settings_.port);
  if (port.ok()) {
    bind_access_to(settings_.access, settings_.host, *port);
  }
  return port;
}

void ApiServer::run() {
  server_->run();
}

void ApiServer::stop() {
  if (server_) {
    server_->stop();
  }
}

Error ApiServer::model_not_found(std::string_view name) const {
  std::string message = "model '" + std::string(name) + "' was not found";
  auto some = catalogue_.some_available_names(3);
  for (std::size_t i = 0; i < some.size(); ++i) {
    message += (i == 0 ? "; available models include " : ", ") + some[i];
  }
  message += ". See GET /api/v1/models?show_all=true";
  return Error(ErrorCode::kModelNotFound, message, "model");
}

void ApiServer::handle(net::Request& r, net::ResponseWriter& raw) {
  struct InFlight {
    std::atomic<int>& count;
    explicit InFlight(std::atomic<int>& c) : count(c) { ++count; }
    ~InFlight() { --count; }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
  } in_flight(in_flight_);
  CorsWriter w(raw, cors_headers(r, settings_.access));
  if (r.method == "OPTIONS") {
    // CORS preflight: never needs the key (browsers do not send it here).
    if (auto denied = check_access(r, settings_.access, RouteAccess::kPublic)) {
      write_error(w, *denied);
      return;
    }
    w.send(204, net::Headers{{"Allow", "GET, POST, OPTIONS"}}, "");
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
  } else if (auto denied = check_access(r, settings_.access, static_cast<RouteAccess>(m.tag))) {
    answer.status = error_status(*denied);
    answer.headers = json_headers();
    answer.body = json_text(error_body(*denied));
  } else {
    return std::nullopt;
  }
  const net::Headers cors = cors_headers(r, settings_.access);
  for (const auto& [name, value] : cors.fields()) {
    answer.headers.add(name, value);
  }
  return answer;
}

void ApiServer::route(
    const std::string& method, const std::string& suffix, RouteAccess access,
    std::function<void(net::Request&, net::ResponseWriter&, std::string_view)> handler) {
  routes_.add_api(
      method, suffix,
      [this, access, handler = std::move(handler)](net::Request& r, net::ResponseWriter& w,
                                                   std::string_view param) {
        if (auto denied = check_access(r, settings_.access, access)) {
          write_error(w, *denied);
          return;
        }
        handler(r, w, param);
      },
      static_cast<int>(access));
}

void ApiServer::register_routes() {
  using P = std::string_view;
  route("GET", "health", RouteAccess::kHealth,
        [this](net::Request&, net::ResponseWriter& w, P) { handle_health(w); });
  route("GET", "live", RouteAccess::kPublic,
        [this](net::Request&, net::ResponseWriter& w, P) { handle_live(w); });
  route("GET", "stats", RouteAccess::kRead,
        [this](net::Request&, net::ResponseWriter& w, P) { handle_stats(w); });
  route("GET", "system-info", RouteAccess::kRead,
        [this](net::Request&, net::ResponseWriter& w, P) { handle_system_info(w); });
  route("GET", "models", RouteAccess::kRead,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_models(r, w); });
  route("GET", "models/{id}", RouteAccess::kRead,
        [this](net::Request&, net::ResponseWriter& w, P id) { handle_model(id, w); });
  route("POST", "load", RouteAccess::kJsonPost,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_load(r, w); });
  route("POST", "unload", RouteAccess::kJsonPost,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_unload(r, w); });
  route("POST", "pull", RouteAccess::kJsonPost,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_pull(r, w); });
  route("POST", "delete", RouteAccess::kJsonPost,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_delete(r, w); });
  route("POST", "install", RouteAccess::kJsonPost,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_install(r, w); });
  route("POST", "uninstall", RouteAccess::kJsonPost,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_uninstall(r, w); });
  const std::pair<const char*, ApiRoute> json_routes[] = {
      {"chat/completions", ApiRoute::kChatCompletions},
      {"completions", ApiRoute::kCompletions},
      {"responses", ApiRoute::kResponses},
      {"embeddings", ApiRoute::kEmbeddings},
      {"reranking", ApiRoute::kReranking},
      {"rerank", ApiRoute::kReranking},
      {"images/generations", ApiRoute::kImageGenerations},
  };
  for (const auto& [path, api] : json_routes) {
    ApiRoute which = api;
    route("POST", path, RouteAccess::kJsonPost,
          [this, which](net::Request& r, net::ResponseWriter& w, P) {
            handle_json_inference(which, r, w);
          });
  }
  route("POST", "audio/transcriptions", RouteAccess::kMultipartPost,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_transcription(r, w); });
  // Liveness also at the root, and never behind the key.
  routes_.add_root(
      "GET", "/live",
      [this](net::Request& r, net::ResponseWriter& w, std::string_view) {
        if (auto denied = check_access(r, settings_.access, RouteAccess::kPublic)) {
          write_error(w, *denied);
          return;
        }
        handle_live(w);
      },
      static_cast<int>(RouteAccess::kPublic));
}

}  // namespace lemon::http
