// RouteTable: API routes under every prefix, root routes as registered,
// trailing {id} parameters (ids may contain '/'), HEAD on GET routes, 405 with
// Allow, and 404, both in the error envelope. Driven through an in-memory
// ResponseWriter.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/http/route_table.h"

namespace lemon::http {
namespace {

using nlohmann::json;

// Records what a handler (or the table) wrote.
class MemoryWriter final : public net::ResponseWriter {
 public:
  bool send(int code, const net::Headers& fields, std::string_view content) override {
    ++responses;
    status = code;
    headers = fields;
    body = std::string(content);
    sent = true;
    return true;
  }
  bool begin_chunked(int code, const net::Headers& fields) override {
    ++responses;
    status = code;
    headers = fields;
    sent = true;
    return true;
  }
  bool write_chunk(std::string_view data) override {
    body += data;
    return true;
  }
  bool finish() override { return true; }
  bool headers_sent() const override { return sent; }
  bool client_connected() override { return true; }
  int client_fd() const override { return -1; }

  int responses = 0;
  int status = 0;
  net::Headers headers;
  std::string body;
  bool sent = false;
};

net::Request request(const std::string& method, const std::string& path) {
  net::Request r;
  r.method = method;
  r.target = path;
  r.path = path;
  return r;
}

// A table whose handlers answer "<name>|<param>" so a test can see which ran.
class HttpApiRouteTable : public ::testing::Test {
 protected:
  static RouteTable::RouteHandler answer(const std::string& name) {
    return [name](net::Request&, net::ResponseWriter& w, std::string_view param) {
      w.send(200, net::Headers{{"Content-Type", "text/plain"}}, name + "|" + std::string(param));
    };
  }

  void SetUp() override {
    table_.add_api("GET", "models", answer("list"));
    table_.add_api("GET", "models/{id}", answer("get-model"));
    table_.add_api("DELETE", "models/{id}", answer("delete-model"));
    table_.add_api("POST", "chat/completions", answer("chat"));
    table_.add_api("GET", "health", answer("health"));
    table_.add_api("POST", "pull", answer("pull"));
    table_.add_root("GET", "/live", answer("live"));
  }

  MemoryWriter dispatch(const std::string& method, const std::string& path) const {
    net::Request r = request(method, path);
    MemoryWriter w;
    table_.dispatch(r, w);
    EXPECT_EQ(w.responses, 1) << method << " " << path;
    return w;
  }

  static json error_of(const MemoryWriter& w) {
    EXPECT_EQ(w.headers.get("Content-Type"), std::optional<std::string_view>("application/json"));
    json j = json::parse(w.body, nullptr, false);
    EXPECT_TRUE(j.is_object() && j.contains("error")) << w.body;
    if (!j.is_object() || !j.contains("error")) {
      return json::object();
    }
    EXPECT_EQ(j["error"].size(), 4u) << w.body;
    return j["error"];
  }

  RouteTable table_;
};

TEST_F(HttpApiRouteTable, PrefixesAreTheFourLemonadeOnes) {
  EXPECT_EQ(RouteTable::api_prefixes(),
            (std::vector<std::string>{"/api/v1/", "/api/v0/", "/v1/", "/v0/"}));
}

TEST_F(HttpApiRouteTable, ApiRoutesAnswerUnderEveryPrefix) {
  for (const char* prefix : {"/api/v1/", "/api/v0/", "/v1/", "/v0/"}) {
    MemoryWriter w = dispatch("GET", std::string(prefix) + "models");
    EXPECT_EQ(w.status, 200) << prefix;
    EXPECT_EQ(w.body, "list|") << prefix;
    MemoryWriter c = dispatch("POST", std::string(prefix) + "chat/completions");
    EXPECT_EQ(c.body, "chat|") << prefix;
  }
}

TEST_F(HttpApiRouteTable, ApiRoutesAreNotServedWithoutOrUnderOtherPrefixes) {
  for (const char* path : {"/models", "/api/v2/models", "/api/models", "/v2/models",
                           "/api/v1/modelsx", "/api/v1/model"}) {
    MemoryWriter w = dispatch("GET", path);
    EXPECT_EQ(w.status, 404) << path;
  }
}

TEST_F(HttpApiRouteTable, TrailingSlashIsTolerated) {
  MemoryWriter w = dispatch("GET", "/api/v1/models/");
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.body, "list|");
}

TEST_F(HttpApiRouteTable, IdParameter) {
  MemoryWriter w = dispatch("GET", "/api/v1/models/Qwen3-0.6B-GGUF");
  EXPECT_EQ(w.body, "get-model|Qwen3-0.6B-GGUF");
  MemoryWriter v0 = dispatch("GET", "/v0/models/user.tiny");
  EXPECT_EQ(v0.body, "get-model|user.tiny");
}

TEST_F(HttpApiRouteTable, IdParameterMayContainSlashes) {
  MemoryWriter w = dispatch("GET", "/v1/models/unsloth/Qwen3-GGUF:Q4_K_M");
  EXPECT_EQ(w.body, "get-model|unsloth/Qwen3-GGUF:Q4_K_M");
}

TEST_F(HttpApiRouteTable, IdRouteDispatchesByMethod) {
  MemoryWriter w = dispatch("DELETE", "/api/v1/models/x");
  EXPECT_EQ(w.body, "delete-model|x");
}

TEST_F(HttpApiRouteTable, RootRoutesAreServedOnlyAsRegistered) {
  EXPECT_EQ(dispatch("GET", "/live").body, "live|");
  EXPECT_EQ(dispatch("GET", "/api/v1/live").status, 404);
  EXPECT_EQ(dispatch("GET", "/v1/live").status, 404);
}

TEST_F(HttpApiRouteTable, HeadIsAnsweredByGetRoutes) {
  net::Request r = request("HEAD", "/api/v1/health");
  MemoryWriter w;
  std::string seen_method;
  RouteTable t;
  t.add_api("GET", "health", [&](net::Request& req, net::ResponseWriter& out, std::string_view) {
    seen_method = req.method;
    out.send(200, net::Headers{}, "ok");
  });
  t.dispatch(r, w);
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(seen_method, "HEAD");  // the handler still sees the real method

  EXPECT_EQ(dispatch("HEAD", "/v1/models/some/id").body, "get-model|some/id");
}

TEST_F(HttpApiRouteTable, HeadOnAPostOnlyRouteIs405) {
  MemoryWriter w = dispatch("HEAD", "/api/v1/pull");
  EXPECT_EQ(w.status, 405);
}

TEST_F(HttpApiRouteTable, WrongMethodIs405WithAllow) {
  MemoryWriter w = dispatch("GET", "/api/v1/chat/completions");
  EXPECT_EQ(w.status, 405);
  EXPECT_EQ(w.headers.get("Allow"), std::optional<std::string_view>("POST"));
  json e = error_of(w);
  EXPECT_EQ(e["code"], "method_not_allowed");
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_TRUE(e["param"].is_null());
  EXPECT_NE(e["message"].get<std::string>().find("GET"), std::string::npos);
}

TEST_F(HttpApiRouteTable, AllowListsEveryMethodOfTheRoute) {
  MemoryWriter w = dispatch("PUT", "/v1/models/abc");
  EXPECT_EQ(w.status, 405);
  auto allow = w.headers.get("Allow");
  ASSERT_TRUE(allow.has_value());
  EXPECT_NE(allow->find("GET"), std::string_view::npos) << *allow;
  EXPECT_NE(allow->find("DELETE"), std::string_view::npos) << *allow;
  EXPECT_EQ(allow->find("PUT"), std::string_view::npos) << *allow;
}

TEST_F(HttpApiRouteTable, AMethodHttpDoesNotKnowIs501OnAnyPath) {
  // RFC 9110 9.1: unrecognized methods are 501; methods are case-sensitive.
  for (const char* method : {"FOO", "get", "BREW"}) {
    for (const char* path : {"/v1/models/abc", "/api/v1/no/such/route"}) {
      MemoryWriter w = dispatch(method, path);
      EXPECT_EQ(w.status, 501) << method << " " << path;
      EXPECT_FALSE(w.headers.get("Allow").has_value());
      EXPECT_EQ(error_of(w)["code"], "not_implemented");
    }
  }
}

TEST_F(HttpApiRouteTable, APathRegisteredAsNotImplementedIs501ForEveryMethod) {
  table_.add_not_implemented("/api/blobs/{id}", "blobs are not kept here", 7);
  for (const char* method : {"POST", "HEAD", "GET", "FOO"}) {
    RouteTable::Match m = table_.match(method, "/api/blobs/sha256:00");
    EXPECT_EQ(m.handler, nullptr) << method;
    EXPECT_EQ(m.status, 501) << method;
    EXPECT_EQ(m.tag, 7) << method << ": the refusal is answered in its route's dialect";
    MemoryWriter w = dispatch(method, "/api/blobs/sha256:00");
    EXPECT_EQ(w.status, 501) << method;
    EXPECT_EQ(error_of(w)["message"], "blobs are not kept here") << method;
  }
  EXPECT_EQ(dispatch("POST", "/api/blobs").status, 404) << "the id is part of the path";
}

TEST_F(HttpApiRouteTable, AnUnknownMethodOnAKnownPathCarriesThePathsTag) {
  table_.add_root("POST", "/api/chat", answer("ollama-chat"), 9);
  RouteTable::Match m = table_.match("FOO", "/api/chat");
  EXPECT_EQ(m.status, 501);
  EXPECT_EQ(m.tag, 9);
}

TEST_F(HttpApiRouteTable, UnknownPathIs404Envelope) {
  MemoryWriter w = dispatch("POST", "/api/v1/no/such/route");
  EXPECT_EQ(w.status, 404);
  json e = error_of(w);
  EXPECT_EQ(e["code"], "not_found");
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_TRUE(e["param"].is_null());
  EXPECT_NE(e["message"].get<std::string>().find("/api/v1/no/such/route"), std::string::npos);
}

TEST_F(HttpApiRouteTable, EmptyIdIsNotARoute) {
  RouteTable t;
  t.add_api("GET", "things/{id}", answer("thing"));
  net::Request r = request("GET", "/api/v1/things/");
  MemoryWriter w;
  t.dispatch(r, w);
  EXPECT_EQ(w.status, 404);
}

TEST_F(HttpApiRouteTable, ExactRouteWinsOverIdRouteWithTheSameBase) {
  RouteTable t;
  t.add_api("GET", "models/{id}", answer("get-model"));
  t.add_api("GET", "models/special", answer("special"));
  net::Request r = request("GET", "/v1/models/special");
  MemoryWriter w;
  t.dispatch(r, w);
  EXPECT_EQ(w.body, "special|");
  net::Request other = request("GET", "/v1/models/specialist");
  MemoryWriter w2;
  t.dispatch(other, w2);
  EXPECT_EQ(w2.body, "get-model|specialist");
}

}  // namespace
}  // namespace lemon::http
