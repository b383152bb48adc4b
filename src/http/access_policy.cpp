#include "lemon/http/access_policy.h"

#include <algorithm>

#include "lemon/net/base64.h"
#include "lemon/net/websocket.h"

namespace lemon::http {

bool constant_time_equals(std::string_view a, std::string_view b) {
  // Always walk the longer input so the loop length does not depend on
  // where the first mismatch is.
  std::size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

void bind_access_to(AccessSettings& settings, const std::string& host, int port,
                    const std::vector<int>& more_ports) {
  const bool loopback = host == "127.0.0.1" || host == "localhost" || host == "::1";
  settings.own_origins.clear();
  settings.allowed_hosts.clear();
  std::vector<int> ports = {port};
  ports.insert(ports.end(), more_ports.begin(), more_ports.end());
  for (int each : ports) {
    const std::string p = ":" + std::to_string(each);
    for (const char* name : {"127.0.0.1", "localhost", "[::1]"}) {
      settings.own_origins.push_back(std::string("http://") + name + p);
      if (loopback) {
        settings.allowed_hosts.push_back(name + p);
      }
    }
    if (!loopback && host != "0.0.0.0" && host != "::") {
      std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
      settings.own_origins.push_back(std::string("http://").append(h).append(p));
    }
  }
}

bool origin_allowed(const net::Request& request, const AccessSettings& settings) {
  auto origin = request.headers.get("Origin");
  if (!origin) {
    return true;  // not a browser cross-origin request
  }
  for (const auto& allowed : settings.cors_origins) {
    if (allowed == "*" || net::iequals(allowed, *origin)) {
      return true;
    }
  }
  for (const auto& own : settings.own_origins) {
    if (net::iequals(own, *origin)) {
      return true;
    }
  }
  return false;
}

namespace {

bool host_allowed(const net::Request& request, const AccessSettings& settings) {
  if (settings.allowed_hosts.empty()) {
    return true;
  }
  auto host = request.headers.get("Host");
  if (!host) {
    return true;  // HTTP/1.0 clients; browsers always send Host
  }
  for (const auto& allowed : settings.allowed_hosts) {
    if (net::iequals(allowed, *host)) {
      return true;
    }
  }
  return false;
}

}  // namespace

net::Headers cors_headers(const net::Request& request, const AccessSettings& settings) {
  net::Headers h;
  auto origin = request.headers.get("Origin");
  if (!origin) {
    return h;
  }
  bool wildcard = false;
  bool listed = false;
  for (const auto& allowed : settings.cors_origins) {
    wildcard = wildcard || allowed == "*";
    listed = listed || net::iequals(allowed, *origin);
  }
  if (!wildcard && !listed) {
    return h;
  }
  h.add("Access-Control-Allow-Origin", wildcard && !listed ? "*" : std::string(*origin));
  h.add("Vary", "Origin");
  h.add("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS");
  h.add("Access-Control-Allow-Headers",
        "Authorization, Content-Type, x-api-key, anthropic-version, anthropic-beta");
  h.add("Access-Control-Max-Age", "600");
  return h;
}

std::optional<std::string_view> presented_key(const net::Request& request, KeyHeaders keys) {
  auto auth = request.headers.get("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth && auth->size() > kBearer.size() &&
      net::iequals(auth->substr(0, kBearer.size()), kBearer)) {
    return auth->substr(kBearer.size());
  }
  if (keys == KeyHeaders::kBearerOrXApiKey) {
    if (auto x_api_key = request.headers.get("x-api-key"); x_api_key && !x_api_key->empty()) {
      return *x_api_key;
    }
  }
  return std::nullopt;
}

std::optional<std::string> socket_key(const net::Request& request) {
  if (auto bearer = presented_key(request, KeyHeaders::kBearer)) {
    return std::string(*bearer);
  }
  auto without_bearer = [](std::string key) {
    if (key.size() > 7 && net::iequals(std::string_view(key).substr(0, 7), "Bearer ")) {
      key.erase(0, 7);
    }
    return key;
  };
  if (auto query = request.query_param("api_key"); query && !query->empty()) {
    return without_bearer(*query);
  }
  for (const auto& protocol : net::offered_subprotocols(request)) {
    constexpr std::string_view kLemonade = "bearer.";
    constexpr std::string_view kOpenAi = "openai-insecure-api-key.";
    if (protocol.starts_with(kLemonade)) {
      if (auto key = net::base64url_decode(std::string_view(protocol).substr(kLemonade.size()));
          key && !key->empty()) {
        return without_bearer(*key);
      }
    } else if (protocol.starts_with(kOpenAi) && protocol.size() > kOpenAi.size()) {
      return protocol.substr(kOpenAi.size());
    }
  }
  return std::nullopt;
}

std::optional<Error> check_access(const net::Request& request, const AccessSettings& settings,
                                  RouteAccess access, KeyHeaders keys, const KeyRing* ring,
                                  Scope scope, const ApiKey** caller) {
  if (caller != nullptr) {
    *caller = nullptr;
  }
  if (!host_allowed(request, settings)) {
    return Error(ErrorCode::kForbidden,
                 "Host '" + std::string(*request.headers.get("Host")) +
                     "' does not name this server (lemonade-router listens on loopback only)");
  }
  if (!origin_allowed(request, settings)) {
    return Error(ErrorCode::kForbidden, "requests from origin '" +
                                            std::string(*request.headers.get("Origin")) +
                                            "' are not allowed (see --cors-origins)");
  }
  const bool needs_key = ring != nullptr && !ring->empty() && access != RouteAccess::kPublic &&
                         scope != Scope::kPublic &&
                         !(access == RouteAccess::kHealth && settings.health_without_auth) &&
                         !(access == RouteAccess::kMetrics && settings.metrics_public);
  if (needs_key) {
    std::optional<std::string> socket_credential;
    std::optional<std::string_view> presented;
    if (keys == KeyHeaders::kWebSocket) {
      socket_credential = socket_key(request);
      if (socket_credential) {
        presented = *socket_credential;
      }
    } else {
      presented = presented_key(request, keys);
    }
    const ApiKey* key = presented ? ring->find(*presented) : nullptr;
    if (key == nullptr && keys == KeyHeaders::kBearerOrXApiKey) {
      // Anthropic's clients send x-api-key; a Bearer that matches nothing
      // does not hide it.
      if (auto x_api_key = request.headers.get("x-api-key"); x_api_key && !x_api_key->empty()) {
        key = ring->find(*x_api_key);
      }
    }
    if (key == nullptr) {
      return Error(ErrorCode::kUnauthorized,
                   keys == KeyHeaders::kBearerOrXApiKey
                       ? "missing or invalid API key: send 'x-api-key: <key>' or "
                         "'Authorization: Bearer <key>'"
                   : keys == KeyHeaders::kWebSocket
                       ? "invalid API key: send it as 'Authorization: Bearer <key>', "
                         "?api_key=<key>, a 'bearer.<base64url key>' subprotocol or an auth "
                         "message"
                       : "missing or invalid API key: send 'Authorization: Bearer <key>'");
    }
    if (!key->has(scope)) {
      return Error(ErrorCode::kForbidden, "API key '" + key->name + "' has the scopes " +
                                              key->scope_list() + "; " + request.method + " " +
                                              request.path + " needs '" + scope_name(scope) + "'");
    }
    if (caller != nullptr) {
      *caller = key;
    }
  }
  return check_media_type(request, access);
}

std::optional<Error> check_media_type(const net::Request& request, RouteAccess access) {
  if (access == RouteAccess::kJsonPost || access == RouteAccess::kMultipartPost) {
    std::string media = request.media_type();
    bool empty = request.body.empty();
    bool json = media == "application/json";
    bool multipart = media == "multipart/form-data";
    bool accepted =
        access == RouteAccess::kJsonPost ? (json || (empty && media.empty())) : multipart;
    if (!accepted) {
      return Error(
          ErrorCode::kUnsupportedMediaType,
          std::string("this route takes Content-Type: ") +
              (access == RouteAccess::kJsonPost ? "application/json" : "multipart/form-data") +
              (media.empty() ? std::string(" (none was sent)") : " (got " + media + ")"));
    }
  }
  return std::nullopt;
}

}  // namespace lemon::http
