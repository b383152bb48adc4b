// The dashboard's files (issue #12 §3): GET / is index.html, GET /web/<file>
// the rest, read from resources/web. Only plain file names are served (no
// folders, no dot files), with a content type by extension.
#include <fstream>
#include <sstream>

#include "lemon/http/api_server.h"
#include "lemon/http/error_response.h"
#include "lemon/http/inference_proxy.h"

namespace lemon::http {
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

void ApiServer::handle_web(std::string_view file, net::ResponseWriter& w) {
  const Error missing(ErrorCode::kRouteNotFound,
                      "no such dashboard file: '" + std::string(file) + "'");
  if (settings_.web_dir.empty() || !plain_name(file)) {
    write_error(w, missing);
    return;
  }
  std::ifstream in(settings_.web_dir + "/" + std::string(file), std::ios::binary);
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

}  // namespace lemon::http
