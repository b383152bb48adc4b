// PresetApi: the preset routes: GET and POST presets, GET,
// PUT and DELETE presets/{id}. Each preset is shown with its server name
// and whether that server is loaded. POST /load {"preset": id} is
// ManagementApi's; a request's "preset.<id>" model is the
// ModelProvisioner's.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include <string_view>

#include "lemon/http/api_routes.h"
#include "lemon/models/preset_catalogue.h"
#include "lemon/net/server.h"
#include "lemon/router/router.h"

namespace lemon::api {

class PresetApi {
 public:
  PresetApi(PresetCatalogue& presets, const Router& router);

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_presets(net::ResponseWriter& w);
  void handle_preset(std::string_view id, net::ResponseWriter& w);
  void handle_preset_create(net::Request& r, net::ResponseWriter& w);
  void handle_preset_replace(std::string_view id, net::Request& r, net::ResponseWriter& w);
  void handle_preset_delete(std::string_view id, net::ResponseWriter& w);

  PresetCatalogue& presets_;
  const Router& router_;
};

}  // namespace lemon::api
