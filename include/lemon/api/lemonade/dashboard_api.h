// DashboardApi: the dashboard's files. GET / (and where
// Lemonade 9.4.1 serves its web page: /status, /api/v1, /api/v0, /web-app)
// is index.html, /favicon.ico the icon, /web/<file> the rest, read from
// `web_dir` (resources/web). Only plain file names are served (no folders,
// no dot files), with a content type by extension.
//
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include <string>
#include <string_view>

#include "lemon/http/api_routes.h"
#include "lemon/net/server.h"

namespace lemon::api {

class DashboardApi {
 public:
  // "" serves no files: every route answers 404.
  explicit DashboardApi(std::string web_dir);

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_web(std::string_view file, net::ResponseWriter& w);

  const std::string web_dir_;
};

}  // namespace lemon::api
