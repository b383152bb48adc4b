// ApiRoutes: where an API room (src/api/*) adds its routes; ApiServer
// implements it. Each route's access (RouteAccess: origin, media type; and
// Scope: the API key it needs) is checked before its handler runs, and its refusals and errors are
// in `dialect`'s shape.
//
// Thread-safety: routes are added while the server is set up, before it
// runs; handlers then run on connection threads.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lemon/http/access_policy.h"
#include "lemon/http/api_dialect.h"
#include "lemon/http/json_socket.h"
#include "lemon/net/server.h"

namespace lemon::http {

class ApiRoutes {
 public:
  // The handler's last argument is the path's "{id}" segment, if any.
  using Handler = std::function<void(net::Request&, net::ResponseWriter&, std::string_view)>;

  virtual ~ApiRoutes() = default;
  // `suffix` under every API prefix (/api/v1/, /api/v0/, /v1/, /v0/).
  // `scope` is what a caller's API key needs (api_keys.h): every route
  // names one.
  virtual void route(const std::string& method, const std::string& suffix, RouteAccess access,
                     Scope scope, Handler handler, ApiDialect dialect = ApiDialect::kLemonade) = 0;
  // A root path ("/api/chat"); "{id}" as the last segment matches the rest.
  virtual void root(const std::string& method, const std::string& path, RouteAccess access,
                    Scope scope, Handler handler, ApiDialect dialect = ApiDialect::kLemonade) = 0;
  // A WebSocket route (json_socket.h): `suffix` under every API prefix and
  // at the root ("/logs/stream"), as Lemonade serves them. Listed in
  // route_scopes() as "WEBSOCKET /api/v1/<suffix>".
  virtual void websocket(const std::string& suffix, SocketRoute route) = 0;
  // A root path of another API that this router has no counterpart for:
  // every method on it gets 501 saying `why`, in `dialect`'s shape, before
  // its key, media type or body is looked at.
  virtual void not_implemented(const std::string& path, std::string why, ApiDialect dialect) = 0;
  // Every route added so far, as "METHOD path" (an API route once, under
  // /api/v1/), with its scope.
  virtual std::vector<std::pair<std::string, Scope>> route_scopes() const = 0;
};

}  // namespace lemon::http
