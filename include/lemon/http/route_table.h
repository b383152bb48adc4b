// RouteTable: maps (method, path) to handlers. API routes are registered once
// by their suffix ("chat/completions", "models/{id}") and served under every
// prefix /api/v1/, /api/v0/, /v1/ and /v0/ (Lemonade's layout); root routes
// ("/live") are served as registered. Lookup is a hash-map probe, not a
// regex scan. GET routes also answer HEAD. A method that is neither one of
// HTTP's own (RFC 9110 9, and PATCH) nor taken by a route gets 501, whatever
// the path (methods are case-sensitive: "get" is not GET); a known path asked
// with another method gets 405 (with Allow); a path registered as not
// implemented gets 501 for every method; an unknown path gets 404; all in
// the error envelope. A WebSocket route (add_websocket) is a GET that
// answers only an upgrade (RFC 6455): a plain GET of its path gets 426 unless
// the path also has a plain GET route, which then serves it, and an upgrade
// of a path without one is served as a plain GET.
//
// Thread-safety: add() during setup only; dispatch() concurrently afterwards.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/net/server.h"

namespace lemon::http {

class RouteTable {
 public:
  // `param` is the text matched by a trailing "{id}" segment, else "".
  using RouteHandler =
      std::function<void(net::Request&, net::ResponseWriter&, std::string_view param)>;

  static const std::vector<std::string>& api_prefixes();

  // Registers `suffix` under every API prefix. A "{id}" matches any
  // non-empty text (model ids may contain '/'): at the end ("models/{id}")
  // the rest of the path, before a fixed tail ("models/{id}/options") what
  // lies between; a path that fits several takes the route with the
  // longest tail. `tag` is the caller's, handed back by match() (the API
  // keeps its RouteAccess there).
  void add_api(const std::string& method, const std::string& suffix, const RouteHandler& handler,
               int tag = 0);
  // Registers an exact path such as "/live".
  void add_root(const std::string& method, const std::string& path, RouteHandler handler,
                int tag = 0);
  // A WebSocket route: `path` as given when `api` is false, else under
  // every API prefix.
  void add_websocket(const std::string& path, bool api, const RouteHandler& handler, int tag = 0);
  // A path this router knows but does not implement (another API's route it
  // has no counterpart for): every method on it gets 501 saying `why`,
  // before any body is read, whatever its media type or size.
  void add_not_implemented(const std::string& path, std::string why, int tag = 0);

  // The route for a method and path, found before any body is read.
  struct Match {
    const RouteHandler* handler = nullptr;  // null: status is 404, 405 or 501
    std::string_view param;
    int tag = 0;             // 405 and 501 on a known path: the tag of one of its routes
    int status = 0;          // 404, 405, 426 or 501 when there is no handler
    bool websocket = false;  // the handler is a WebSocket route's
    std::string allow;       // 405: the methods the path takes
    std::string_view why;    // 501 on a path registered as not implemented
  };
  // `upgrade`: the request asks for a WebSocket (net::is_websocket_upgrade).
  Match match(std::string_view method, std::string_view path, bool upgrade = false) const;

  // The error for a Match without a handler, and its whole answer: status,
  // headers (Allow on 405) and the envelope.
  static Error refusal_error(const Match& match, const net::Request& request);
  static net::EarlyAnswer refusal(const Match& match, const net::Request& request);

  // Keeps `match` (found for `request`'s own method and path) in the
  // request, so dispatch() runs its handler without matching again.
  static void remember(const Match& match, net::Request& request);
  // Runs the route remember() kept, else matches the path now.
  void dispatch(net::Request& request, net::ResponseWriter& writer) const;

 private:
  struct Route {
    std::string method;
    RouteHandler handler;
    int tag = 0;
    bool websocket = false;
  };
  struct Methods {
    std::vector<Route> by_method;
    std::string not_implemented;  // non-empty: every method gets 501 saying this
    int tag = 0;                  // not_implemented's tag
  };
  Methods& methods_for(const std::string& path);
  void add(const std::string& method, const std::string& path, RouteHandler handler, int tag,
           bool websocket = false);
  const Methods* find(std::string_view path, std::string_view& param) const;

  // HTTP's own methods and every method some route takes: others are 501.
  std::vector<std::string> known_methods_ = {"GET",    "HEAD",  "POST",  "PUT",
                                             "DELETE", "PATCH", "TRACE", "OPTIONS"};
  std::unordered_map<std::string, Methods> exact_;
  // "/v1/models/" + "{id}" + "/options": longest `suffix` first.
  struct ParamRoute {
    std::string base;
    std::string suffix;
    Methods methods;
  };
  std::vector<ParamRoute> with_param_;
};

}  // namespace lemon::http
