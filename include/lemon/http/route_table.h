// RouteTable: maps (method, path) to handlers. API routes are registered once
// by their suffix ("chat/completions", "models/{id}") and served under every
// prefix /api/v1/, /api/v0/, /v1/ and /v0/ (Lemonade's layout); root routes
// ("/live") are served as registered. Lookup is a hash-map probe, not a
// regex scan. GET routes also answer HEAD. A known path asked with another
// method gets 405 (with Allow); an unknown path gets 404; both in the error
// envelope.
//
// Thread-safety: add() during setup only; dispatch() concurrently afterwards.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lemon/net/server.h"

namespace lemon::http {

class RouteTable {
 public:
  // `param` is the text matched by a trailing "{id}" segment, else "".
  using RouteHandler =
      std::function<void(net::Request&, net::ResponseWriter&, std::string_view param)>;

  static const std::vector<std::string>& api_prefixes();

  // Registers `suffix` under every API prefix. A suffix ending in "/{id}"
  // matches any non-empty remainder (model ids may contain '/').
  void add_api(const std::string& method, const std::string& suffix, const RouteHandler& handler);
  // Registers an exact path such as "/live".
  void add_root(const std::string& method, const std::string& path, RouteHandler handler);

  void dispatch(net::Request& request, net::ResponseWriter& writer) const;

 private:
  struct Methods {
    std::vector<std::pair<std::string, RouteHandler>> by_method;
  };
  void add(const std::string& method, const std::string& path, RouteHandler handler);
  const Methods* find(std::string_view path, std::string_view& param) const;

  std::unordered_map<std::string, Methods> exact_;
  std::vector<std::pair<std::string, Methods>> with_param_;  // "/v1/models/" -> ...
};

}  // namespace lemon::http
