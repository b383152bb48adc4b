// BackendApi: the backend routes: POST install (a recipe's
// backend, pinned and verified; streaming speaks the same SSE events as
// pull) and POST uninstall (models running on that backend are unloaded
// first, each after it drains). Auto-load's install step is the
// ModelProvisioner's.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include "lemon/backends/backend_installer.h"
#include "lemon/http/api_routes.h"
#include "lemon/net/server.h"
#include "lemon/router/router.h"

namespace lemon::api {

class BackendApi {
 public:
  BackendApi(BackendInstaller& installer, Router& router);

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_install(net::Request& r, net::ResponseWriter& w);
  void handle_uninstall(net::Request& r, net::ResponseWriter& w);

  BackendInstaller& installer_;
  Router& router_;
};

}  // namespace lemon::api
