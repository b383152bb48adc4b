// What ApiServer's two files share (api_server.cpp, api_server_sockets.cpp):
// a route's tag in the route table (its RouteAccess, ApiDialect and Scope),
// and the answer of --websocket-port's listener to a request that is not an
// upgrade. Internal to src/http.
//
// Thread-safety: pure functions.
#pragma once

#include "lemon/http/access_policy.h"
#include "lemon/http/api_dialect.h"
#include "lemon/http/api_keys.h"
#include "lemon/net/server.h"

namespace lemon::http {

inline int route_tag(RouteAccess access, ApiDialect dialect, Scope scope) {
  return static_cast<int>(access) | (static_cast<int>(dialect) << 8) |
         (static_cast<int>(scope) << 16);
}
inline RouteAccess tag_access(int tag) {
  return static_cast<RouteAccess>(tag & 0xff);
}
inline ApiDialect tag_dialect(int tag) {
  return static_cast<ApiDialect>((tag >> 8) & 0xff);
}
inline Scope tag_scope(int tag) {
  return static_cast<Scope>((tag >> 16) & 0xff);
}

// 426 upgrade_required, with `Upgrade: websocket`.
net::EarlyAnswer websocket_port_refusal(const net::Request& r);

}  // namespace lemon::http
