// PressureApi: Lemonade 11's test hook for its GPU-pressure eviction, POST
// /internal/simulate-vram-pressure {"pct": 0.95}: as if a device's memory
// were that fraction in use. At or above --auto-evict-threshold-pct, with
// --auto-evict on, the least recently used idle, unpinned model is unloaded
// (Router::relieve_pressure); below it nothing happens. Admin scope at the
// root; with no API keys configured only a loopback client may call it.
//
// Ownership: holds a reference to the router, which outlives it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include "lemon/http/api_routes.h"
#include "lemon/router/router.h"

namespace lemon::api {

class PressureApi {
 public:
  explicit PressureApi(Router& router) : router_(router) {}

  void register_routes(http::ApiRoutes& routes);

 private:
  Router& router_;
};

}  // namespace lemon::api
