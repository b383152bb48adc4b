// Who may call what (issue #3 "Access control (safe defaults)"):
// - API key: with one configured, every route but GET /live needs
//   `Authorization: Bearer <key>` (compared in constant time); /health too,
//   unless health_without_auth.
// - Origin: a request carrying an Origin header from another site is refused
//   (403) unless that origin is configured; CORS headers are sent only for
//   configured origins, and `*` only when the user configured `*`.
// - CSRF: a POST body must be JSON (or multipart/form-data where the route
//   takes uploads), so a cross-site "simple" form post cannot reach a route.
//
// Thread-safety: pure functions over immutable settings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/http/message.h"

namespace lemon::http {

struct AccessSettings {
  std::string api_key;  // empty: no authentication
  bool health_without_auth = false;
  std::vector<std::string> cors_origins;  // exact origins ("http://localhost:3000") or "*"
};

// What a route accepts, for the checks above.
enum class RouteAccess {
  kPublic,         // GET /live: no key needed
  kHealth,         // GET /health: key needed unless health_without_auth
  kRead,           // other GET routes
  kJsonPost,       // POST with a JSON body (or an empty body)
  kMultipartPost,  // POST with a multipart/form-data body
};

// The error to answer with, or nullopt when the request may proceed.
std::optional<Error> check_access(const Request& request, const AccessSettings& settings,
                                  RouteAccess access);

// CORS response headers for this request's Origin: empty when it has none or
// it is not allowed.
Headers cors_headers(const Request& request, const AccessSettings& settings);

// True when the request has no Origin, the origin is configured (or `*` is),
// or it is the router's own origin (same host and port).
bool origin_allowed(const Request& request, const AccessSettings& settings);

// Compares without an early exit, so the time taken does not reveal how much
// of a guessed key was right.
bool constant_time_equals(std::string_view a, std::string_view b);

}  // namespace lemon::http
