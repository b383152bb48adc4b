#include "lemon/api/lemonade/dashboard_api.h"

#include <fstream>
#include <sstream>

#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"

namespace lemon::api {

namespace {

const char* content_type_for(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".html")) {
    return "text/html; charset=utf-8";
  }
  if (ends(".js")) {
    return "text/javascript; charset=utf-8";
  }
  if (ends(".css")) {
    return "text/css; charset=utf-8";
  }
  if (ends(".svg")) {
    return "image/svg+xml";
  }
  if (ends(".png")) {
    return "image/png";
  }
  if (ends(".json")) {
    return "application/json";
  }
  return "application/octet-stream";
}

bool plain_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.size() > 128) {
    return false;
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) {
      return false;
    }
  }
  return true;
}

}  // namespace

DashboardApi::DashboardApi(std::string web_dir) : web_dir_(std::move(web_dir)) {}

void DashboardApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  // Where Lemonade 9.4.1 serves its web page (/, /status, /api/v1, /web-app)
  // and icon, this router serves its dashboard, so bookmarks keep working.
  for (const char* page : {"/", "/status", "/api/v1", "/api/v0", "/web-app"}) {
    routes.root("GET", page, RouteAccess::kPublic, Scope::kPublic,
                [this](net::Request&, net::ResponseWriter& w, P) { handle_web("index.html", w); });
  }
  routes.root("GET", "/favicon.ico", RouteAccess::kPublic, Scope::kPublic,
              [this](net::Request&, net::ResponseWriter& w, P) { handle_web("favicon.svg", w); });
  routes.root("GET", "/web/{id}", RouteAccess::kPublic, Scope::kPublic,
              [this](net::Request&, net::ResponseWriter& w, P file) { handle_web(file, w); });
}

void DashboardApi::handle_web(std::string_view file, net::ResponseWriter& w) {
  const Error missing(ErrorCode::kRouteNotFound,
                      "no such dashboard file: '" + std::string(file) + "'");
  if (web_dir_.empty() || !plain_name(file)) {
    write_error(w, missing);
    return;
  }
  std::ifstream in(web_dir_ + "/" + std::string(file), std::ios::binary);
  if (!in) {
    write_error(w, missing);
    return;
  }
  std::stringstream body;
  body << in.rdbuf();
  w.send(200,
         net::Headers{{"Content-Type", content_type_for(file)},
                      {"Cache-Control", "no-cache"},
                      {"X-Content-Type-Options", "nosniff"},
                      // The page talks only to this router, loads nothing else.
                      {"Content-Security-Policy",
                       "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                       "script-src 'self'; connect-src 'self'; frame-ancestors 'none'"}},
         body.str());
}

}  // namespace lemon::api
