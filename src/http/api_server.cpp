#include "lemon/http/api_server.h"

#include "lemon/core/log.h"

namespace lemon::http {

ApiServer::ApiServer(ApiSettings settings, ModelCatalogue& catalogue, Router& router,
                     StatsStore& stats)
    : settings_(std::move(settings)), catalogue_(catalogue), router_(router), stats_(stats) {
  register_routes();
  server_ = std::make_unique<Server>(
      settings_.server, [this](Request& r, ResponseWriter& w) { routes_.dispatch(r, w); });
}

ApiServer::~ApiServer() {
  stop();
}

Result<int> ApiServer::bind() {
  return server_->bind(settings_.host, settings_.port);
}

void ApiServer::run() {
  server_->run();
}

void ApiServer::stop() {
  if (server_) {
    server_->stop();
  }
}

void ApiServer::register_routes() {
  auto get = [this](const std::string& path, auto fn) {
    routes_.add_api("GET", path, [this, fn](Request& r, ResponseWriter& w, std::string_view p) {
      fn(this, r, w, p);
    });
  };
  auto post = [this](const std::string& path, auto fn) {
    routes_.add_api("POST", path, [this, fn](Request& r, ResponseWriter& w, std::string_view p) {
      fn(this, r, w, p);
    });
  };
  get("health",
      [](ApiServer* s, Request&, ResponseWriter& w, std::string_view) { s->handle_health(w); });
  get("stats",
      [](ApiServer* s, Request&, ResponseWriter& w, std::string_view) { s->handle_stats(w); });
  get("models", [](ApiServer* s, Request& r, ResponseWriter& w, std::string_view) {
    s->handle_models(r, w);
  });
  get("models/{id}", [](ApiServer* s, Request&, ResponseWriter& w, std::string_view id) {
    s->handle_model(id, w);
  });
  post("load",
       [](ApiServer* s, Request& r, ResponseWriter& w, std::string_view) { s->handle_load(r, w); });
  post("unload", [](ApiServer* s, Request& r, ResponseWriter& w, std::string_view) {
    s->handle_unload(r, w);
  });
  post("chat/completions",
       [](ApiServer* s, Request& r, ResponseWriter& w, std::string_view) { s->handle_chat(r, w); });
  post("completions", [](ApiServer* s, Request& r, ResponseWriter& w, std::string_view) {
    s->handle_completions(r, w);
  });
  routes_.add_root("GET", "/live",
                   [this](Request&, ResponseWriter& w, std::string_view) { handle_live(w); });
  routes_.add_api("GET", "live",
                  [this](Request&, ResponseWriter& w, std::string_view) { handle_live(w); });
}

}  // namespace lemon::http
