// The router's own origins and accepted Host values come from where it
// listens, never from the request (DNS rebinding).
#include <gtest/gtest.h>

#include "lemon/http/access_policy.h"

namespace lemon::http {
namespace {

net::Request request_with(std::initializer_list<std::pair<std::string, std::string>> headers) {
  net::Request r;
  r.method = "GET";
  r.path = "/api/v1/health";
  for (const auto& [k, v] : headers) {
    r.headers.add(k, v);
  }
  return r;
}

TEST(AccessRebinding, LoopbackRouterAcceptsOnlyItsOwnHostNames) {
  AccessSettings s;
  bind_access_to(s, "127.0.0.1", 8000);
  for (const char* host : {"127.0.0.1:8000", "localhost:8000", "[::1]:8000"}) {
    EXPECT_FALSE(check_access(request_with({{"Host", host}}), s, RouteAccess::kRead)) << host;
  }
  for (const char* host : {"evil.example:8000", "127.0.0.1:9000", "localhost"}) {
    auto denied = check_access(request_with({{"Host", host}}), s, RouteAccess::kRead);
    ASSERT_TRUE(denied) << host;
    EXPECT_EQ(denied->code(), ErrorCode::kForbidden);
  }
}

TEST(AccessRebinding, AnOriginMatchingAForeignHostIsNotOurs) {
  AccessSettings s;
  bind_access_to(s, "localhost", 8000);
  auto rebound =
      request_with({{"Host", "evil.example:8000"}, {"Origin", "http://evil.example:8000"}});
  EXPECT_FALSE(origin_allowed(rebound, s));
  auto own = request_with({{"Host", "localhost:8000"}, {"Origin", "http://localhost:8000"}});
  EXPECT_TRUE(origin_allowed(own, s));
}

TEST(AccessRebinding, AllInterfacesSkipsTheHostCheckButKeepsOriginRules) {
  AccessSettings s;
  bind_access_to(s, "0.0.0.0", 8000);
  EXPECT_TRUE(s.allowed_hosts.empty());
  EXPECT_FALSE(check_access(request_with({{"Host", "mybox.lan:8000"}}), s, RouteAccess::kRead));
  auto foreign = request_with({{"Host", "mybox.lan:8000"}, {"Origin", "http://evil.example"}});
  EXPECT_TRUE(check_access(foreign, s, RouteAccess::kRead));
}

}  // namespace
}  // namespace lemon::http
