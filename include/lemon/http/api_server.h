// ApiServer: the HTTP surface of lemonade-router. It owns the HTTP server and
// the route table, and turns each request into calls on the catalogue, the
// router and the stats store. Handlers are thin: parse and check the body,
// then one router call, then one response writer (research/aesthetics.md,
// "patterns to avoid" 1).
//
// Thread-safety: bind()/run() from the main thread; stop() from any thread;
// handlers run on connection threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lemon/backends/wrapped_server.h"
#include "lemon/http/route_table.h"
#include "lemon/http/server.h"
#include "lemon/models/catalogue.h"
#include "lemon/router/request_stats.h"
#include "lemon/router/router.h"

namespace lemon::http {

struct ApiSettings {
  std::string host = "127.0.0.1";
  int port = 8000;
  ServerOptions server;
  // How often a streaming client waiting for a load gets ": loading".
  std::chrono::milliseconds keepalive_interval{1000};
};

class ApiServer {
 public:
  ApiServer(ApiSettings settings, ModelCatalogue& catalogue, Router& router, StatsStore& stats);
  ~ApiServer();

  Result<int> bind();
  void run();
  void stop();

 private:
  void register_routes();

  // Management (handlers_management.cpp).
  void handle_health(ResponseWriter& w);
  void handle_live(ResponseWriter& w);
  void handle_stats(ResponseWriter& w);
  void handle_models(Request& r, ResponseWriter& w);
  void handle_model(std::string_view id, ResponseWriter& w);
  void handle_load(Request& r, ResponseWriter& w);
  void handle_unload(Request& r, ResponseWriter& w);

  // Inference (handlers_inference.cpp).
  void handle_chat(Request& r, ResponseWriter& w);
  void handle_completions(Request& r, ResponseWriter& w);
  // Shared tail of every JSON inference route: model lookup and type check,
  // acquire (auto-load, keepalives, cancellation), then forward.
  void run_inference(ApiRoute route, nlohmann::json& body, Request& r, ResponseWriter& w);

  ApiSettings settings_;
  ModelCatalogue& catalogue_;
  Router& router_;
  StatsStore& stats_;
  RouteTable routes_;
  std::unique_ptr<Server> server_;
};

}  // namespace lemon::http
