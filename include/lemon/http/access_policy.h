// Who may call what, with safe defaults:
// - API keys (api_keys.h): with any configured, every route but the public
//   ones needs `Authorization: Bearer <key>` of a key with the route's
//   scope; /health and /metrics too, unless health_without_auth or
//   metrics_public. Routes that speak Anthropic's API also take the key as
//   `x-api-key: <key>`, as Anthropic's clients send it.
// - Origin: a request carrying an Origin header from another site is refused
//   (403) unless that origin is configured; CORS headers are sent only for
//   configured origins, and `*` only when the user configured `*`. The
//   router's own origins are fixed when it binds, never taken from the
//   request's Host header (which an attacker controls).
// - Host: when listening on loopback only, the Host header must name the
//   router (127.0.0.1, localhost or [::1] with its port), so a page whose
//   DNS name was re-pointed at 127.0.0.1 (DNS rebinding) is refused (403).
// - CSRF: a POST body must be JSON (or multipart/form-data where the route
//   takes uploads), so a cross-site "simple" form post cannot reach a route.
//
// Thread-safety: pure functions over immutable settings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/http/api_keys.h"
#include "lemon/net/message.h"

namespace lemon::http {

struct AccessSettings {
  bool health_without_auth = false;
  bool metrics_public = false;            // --metrics-public: GET /metrics without the key
  std::vector<std::string> cors_origins;  // exact origins ("http://localhost:3000") or "*"
  // Filled by bind_access_to(): the router's own origins, and the Host
  // values accepted (empty: any Host, when listening beyond loopback).
  std::vector<std::string> own_origins;
  std::vector<std::string> allowed_hosts;
};

// Fills own_origins and allowed_hosts for a router listening on host:port
// (and on host:other for each of `more_ports`, e.g. --ollama-port).
void bind_access_to(AccessSettings& settings, const std::string& host, int port,
                    const std::vector<int>& more_ports = {});

// What a route accepts, for the checks above.
enum class RouteAccess {
  kPublic,         // GET /live: no key needed
  kHealth,         // GET /health: key needed unless health_without_auth
  kMetrics,        // GET /metrics: key needed unless metrics_public
  kRead,           // other GET routes
  kJsonPost,       // POST with a JSON body (or an empty body)
  kMultipartPost,  // POST with a multipart/form-data body
};

// Where a route takes the API key from.
enum class KeyHeaders {
  kBearer,           // Authorization: Bearer <key>
  kBearerOrXApiKey,  // that, or x-api-key: <key> (Anthropic's Messages API)
  kWebSocket,        // socket_key(): what a WebSocket's client can send
};

// The key the request presents, from the headers `keys` names.
std::optional<std::string_view> presented_key(const net::Request& request, KeyHeaders keys);

// The key a WebSocket upgrade presents, the first of (as Lemonade reads
// them): `Authorization: Bearer <key>`; `?api_key=<key>`; a
// `bearer.<base64url(key)>` subprotocol (Lemonade's app) or an
// `openai-insecure-api-key.<key>` one (OpenAI's browser clients). A leading
// "Bearer " is taken off the query's and the subprotocol's.
std::optional<std::string> socket_key(const net::Request& request);

// The error to answer with, or nullopt when the request may proceed. With
// keys in `ring` (api_keys.h), a route of any scope but kPublic needs one of
// them (401 without) that has `scope` (403 naming the key and the scope);
// the key is stored in `*caller`. No ring, or an empty one: no key needed.
std::optional<Error> check_access(const net::Request& request, const AccessSettings& settings,
                                  RouteAccess access, KeyHeaders keys = KeyHeaders::kBearer,
                                  const KeyRing* ring = nullptr, Scope scope = Scope::kPublic,
                                  const ApiKey** caller = nullptr);

// The Content-Type check alone (part of check_access): run again once the
// body has been read, since an empty body needs none.
std::optional<Error> check_media_type(const net::Request& request, RouteAccess access);

// CORS response headers for this request's Origin: empty when it has none or
// it is not allowed.
net::Headers cors_headers(const net::Request& request, const AccessSettings& settings);

// True when the request has no Origin, the origin is configured (or `*` is),
// or it is one of the router's own origins.
bool origin_allowed(const net::Request& request, const AccessSettings& settings);

// Compares without an early exit, so the time taken does not reveal how much
// of a guessed key was right.
bool constant_time_equals(std::string_view a, std::string_view b);

}  // namespace lemon::http
