// WebSocket routes in the HTTP layer: the route table's WebSocket kind (an
// upgrade beside a plain GET of the same path, 426 for a plain GET of a
// WebSocket-only path), the subprotocol a server answers with, and where a
// WebSocket's client may put its API key.
#include <gtest/gtest.h>

#include <string>

#include "lemon/auth/api_keys.h"
#include "lemon/http/access_policy.h"
#include "lemon/http/json_socket.h"
#include "lemon/http/route_table.h"
#include "lemon/net/base64.h"

namespace lemon::http {
namespace {

using auth::ApiKey;
using auth::KeyRing;
using auth::Scope;
using auth::ScopeSet;
using auth::sha256_of_key;

net::Request get(const std::string& target, bool upgrade = false) {
  net::Request r;
  r.method = "GET";
  r.target = target;
  const auto q = target.find('?');
  r.path = target.substr(0, q);
  r.query = q == std::string::npos ? "" : target.substr(q + 1);
  r.headers.add("Host", "127.0.0.1:8000");
  if (upgrade) {
    r.headers.add("Upgrade", "websocket");
    r.headers.add("Connection", "Upgrade");
    r.headers.add("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
    r.headers.add("Sec-WebSocket-Version", "13");
  }
  return r;
}

RouteTable::RouteHandler named(int* ran, int value) {
  return [ran, value](net::Request&, net::ResponseWriter&, std::string_view) { *ran = value; };
}

TEST(HttpWebSocketRoutes, AnUpgradeAndAPlainGetShareAPath) {
  RouteTable table;
  int ran = 0;
  table.add_api("GET", "logs/stream", named(&ran, 1));
  table.add_websocket("logs/stream", true, named(&ran, 2));
  table.add_websocket("/logs/stream", false, named(&ran, 2));
  table.add_websocket("realtime", true, named(&ran, 3));

  auto plain = table.match("GET", "/api/v1/logs/stream", false);
  ASSERT_NE(plain.handler, nullptr);
  EXPECT_FALSE(plain.websocket);
  auto socket = table.match("GET", "/v0/logs/stream", true);
  ASSERT_NE(socket.handler, nullptr);
  EXPECT_TRUE(socket.websocket);
  EXPECT_TRUE(table.match("GET", "/logs/stream", true).websocket) << "and at the root";

  // A plain GET of a WebSocket-only path: 426, saying to upgrade.
  auto refused = table.match("GET", "/v1/realtime", false);
  EXPECT_EQ(refused.handler, nullptr);
  EXPECT_EQ(refused.status, 426);
  const net::Request r = get("/v1/realtime");
  EXPECT_EQ(RouteTable::refusal_error(refused, r).code(), ErrorCode::kUpgradeRequired);
  EXPECT_EQ(RouteTable::refusal(refused, r).headers.get("Upgrade"), "websocket");
  // An upgrade of a path without a WebSocket route is a plain GET.
  table.add_root("GET", "/live", named(&ran, 4));
  auto live = table.match("GET", "/live", true);
  ASSERT_NE(live.handler, nullptr);
  EXPECT_FALSE(live.websocket);
  // Other methods on a WebSocket path: 405 naming GET.
  auto post = table.match("POST", "/api/v1/realtime", false);
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.allow, "GET");
}

TEST(HttpWebSocketRoutes, TheSubprotocolAnswered) {
  auto offered = [](const std::string& list) {
    net::Request r = get("/realtime", true);
    if (!list.empty()) {
      r.headers.add("Sec-WebSocket-Protocol", list);
    }
    return choose_subprotocol(r);
  };
  EXPECT_EQ(offered(""), std::string()) << "none offered, none answered";
  EXPECT_EQ(offered("lemonade-realtime, bearer.c2stdGVzdA"), "lemonade-realtime");
  EXPECT_EQ(offered("realtime, openai-insecure-api-key.sk, openai-beta.realtime-v1"), "realtime");
  EXPECT_EQ(offered("bearer.c2stdGVzdA"), std::nullopt) << "never a credential";
  EXPECT_EQ(offered("chat, superchat"), std::nullopt);
}

TEST(HttpWebSocketRoutes, WhereTheKeyMayBe) {
  net::Request header = get("/logs/stream", true);
  header.headers.add("Authorization", "Bearer sk-header");
  header.target += "?api_key=sk-query";
  header.query = "api_key=sk-query";
  EXPECT_EQ(socket_key(header), "sk-header") << "the header first, as Lemonade reads them";

  EXPECT_EQ(socket_key(get("/logs/stream?api_key=sk-query", true)), "sk-query");
  EXPECT_EQ(socket_key(get("/logs/stream?api_key=Bearer%20sk-query", true)), "sk-query");
  EXPECT_EQ(socket_key(get("/logs/stream?api_key=", true)), std::nullopt);

  net::Request app = get("/logs/stream", true);
  std::string url = net::base64_encode("sk-äpp");
  for (char& c : url) {
    c = c == '+' ? '-' : c == '/' ? '_' : c;
  }
  while (url.back() == '=') {
    url.pop_back();
  }
  app.headers.add("Sec-WebSocket-Protocol", "lemonade-realtime, bearer." + url);
  EXPECT_EQ(socket_key(app), "sk-äpp");

  net::Request openai = get("/realtime", true);
  openai.headers.add("Sec-WebSocket-Protocol",
                     "realtime, openai-insecure-api-key.sk-openai, openai-beta.realtime-v1");
  EXPECT_EQ(socket_key(openai), "sk-openai");

  net::Request garbled = get("/logs/stream", true);
  garbled.headers.add("Sec-WebSocket-Protocol", "lemonade-realtime, bearer.!!!");
  EXPECT_EQ(socket_key(garbled), std::nullopt);
  EXPECT_EQ(socket_key(get("/logs/stream", true)), std::nullopt);
}

TEST(HttpWebSocketRoutes, TheKeyIsJudgedLikeAnyOther) {
  KeyRing ring(
      {ApiKey{"reader", sha256_of_key("k-read"), static_cast<ScopeSet>(Scope::kRead), {}, 0, 0}});
  AccessSettings settings;
  bind_access_to(settings, "127.0.0.1", 8000);
  const ApiKey* key = nullptr;
  net::Request ok = get("/logs/stream?api_key=k-read", true);
  EXPECT_EQ(check_access(ok, settings, RouteAccess::kRead, KeyHeaders::kWebSocket, &ring,
                         Scope::kRead, &key),
            std::nullopt);
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->name, "reader");
  auto wrong = check_access(get("/logs/stream?api_key=nope", true), settings, RouteAccess::kRead,
                            KeyHeaders::kWebSocket, &ring, Scope::kRead);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(wrong->code(), ErrorCode::kUnauthorized);
  auto scope = check_access(ok, settings, RouteAccess::kRead, KeyHeaders::kWebSocket, &ring,
                            Scope::kInference);
  ASSERT_TRUE(scope.has_value());
  EXPECT_EQ(scope->code(), ErrorCode::kForbidden);
  net::Request evil = get("/logs/stream?api_key=k-read", true);
  evil.headers.add("Origin", "http://evil.example");
  auto origin =
      check_access(evil, settings, RouteAccess::kRead, KeyHeaders::kWebSocket, &ring, Scope::kRead);
  ASSERT_TRUE(origin.has_value());
  EXPECT_EQ(origin->code(), ErrorCode::kForbidden);
}

}  // namespace
}  // namespace lemon::http
