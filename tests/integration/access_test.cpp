// Access control (issue #3, docs/api.md "Access control"): the API key on
// every route but /live, --health-without-auth, LEMONADE_API_KEY; Origin
// checks and CORS (--cors-origins, preflights); and the Content-Type rule
// that blocks cross-site "simple" form posts (CSRF).
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

const std::string kKey = "s3cret";

struct Route {
  std::string method;
  std::string path;
  std::string content_type;  // POST only
  std::string body;
};

// Every route of the API, each with a body that would be served with the key.
std::vector<Route> every_route() {
  const std::string json = "application/json";
  return {
      {"GET", "/api/v1/health", "", ""},
      {"GET", "/api/v1/stats", "", ""},
      {"GET", "/api/v1/models", "", ""},
      {"GET", "/api/v1/models/user.a", "", ""},
      {"GET", "/api/v1/system-info", "", ""},
      {"POST", "/api/v1/load", json, R"({"model_name":"user.a"})"},
      {"POST", "/api/v1/unload", json, "{}"},
      {"POST", "/api/v1/chat/completions", json, chat_body("user.a").dump()},
      {"POST", "/api/v1/completions", json, R"({"model":"user.a","prompt":"x"})"},
      {"POST", "/api/v1/responses", json, R"({"model":"user.a","input":"x"})"},
      {"POST", "/api/v1/embeddings", json, R"({"model":"user.e","input":"x"})"},
      {"POST", "/api/v1/reranking", json, R"({"model":"user.r","query":"q","documents":["d"]})"},
      {"POST", "/api/v1/rerank", json, R"({"model":"user.r","query":"q","documents":["d"]})"},
      {"POST", "/api/v1/audio/transcriptions", multipart_content_type(),
       multipart_body({form_file("file", wav_bytes(160), "a.wav", "audio/wav"),
                       form_field("model", "user.w")})},
      {"POST", "/api/v1/images/generations", json, R"({"model":"user.i","prompt":"x"})"},
      {"POST", "/v1/chat/completions", json, chat_body("user.a").dump()},
  };
}

class AccessTest : public RouterTest {
 protected:
  HttpReply send(const Route& route, HeaderList headers) {
    if (!route.content_type.empty()) {
      headers.emplace_back("Content-Type", route.content_type);
    }
    return raw_request(port(), route.method, route.path, headers, route.body);
  }

  HttpReply get(const std::string& path, const HeaderList& headers = {}) {
    return raw_request(port(), "GET", path, headers);
  }

  HttpReply post_json(const std::string& path, const std::string& body, HeaderList headers = {}) {
    headers.emplace_back("Content-Type", "application/json");
    return raw_request(port(), "POST", path, headers, body);
  }

  // A CORS preflight (OPTIONS) from `origin` for `method` on `path`, asking
  // for `request_headers` unless that is empty.
  HttpReply preflight(const std::string& path, const std::string& origin, const std::string& method,
                      const std::string& request_headers = "") {
    HeaderList headers = {{"Origin", origin}, {"Access-Control-Request-Method", method}};
    if (!request_headers.empty()) {
      headers.emplace_back("Access-Control-Request-Headers", request_headers);
    }
    return raw_request(port(), "OPTIONS", path, headers);
  }

  // POST with Content-Type `type`, or with none if `type` is empty.
  HttpReply post_typed(const std::string& path, const std::string& type, const std::string& body) {
    HeaderList headers;
    if (!type.empty()) {
      headers.emplace_back("Content-Type", type);
    }
    return raw_request(port(), "POST", path, headers, body);
  }

  void expect_error(const HttpReply& r, int status, const std::string& code,
                    const std::string& what) {
    EXPECT_EQ(r.status, status) << what << ": " << r.error << r.body;
    auto j = r.json();
    EXPECT_TRUE(is_error_envelope(j)) << what << ": " << r.body;
    EXPECT_EQ(j["error"]["code"], code) << what << ": " << r.body;
  }

  // /health read with the key (the key is harmless when none is configured).
  nlohmann::json health_with_key() {
    HttpReply r = get("/api/v1/health", {{"Authorization", "Bearer " + kKey}});
    EXPECT_EQ(r.status, 200) << r.error << r.body;
    return r.json();
  }

  void expect_nothing_started() {
    EXPECT_TRUE(health_with_key()["all_models_loaded"].empty());
    EXPECT_EQ(router().count_log("starting "), 0) << "a backend was started";
  }
};

// ---- API key --------------------------------------------------------------

TEST_F(AccessTest, EveryRouteNeedsTheKey) {
  env_.add_every_type();
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", kKey}));
  const std::vector<std::pair<std::string, HeaderList>> bad = {
      {"no Authorization", {}},
      {"wrong key", {{"Authorization", "Bearer wrong"}}},
      {"no Bearer prefix", {{"Authorization", kKey}}},
      {"Basic scheme", {{"Authorization", "Basic " + kKey}}},
      {"a prefix of the key", {{"Authorization", "Bearer s3cre"}}},
      {"the key and more", {{"Authorization", "Bearer " + kKey + "x"}}},
      {"Bearer alone", {{"Authorization", "Bearer "}}},
      {"key in another header", {{"X-Api-Key", kKey}}},
  };
  for (const auto& route : every_route()) {
    for (const auto& [what, headers] : bad) {
      HttpReply r = send(route, headers);
      expect_error(r, 401, "invalid_api_key", route.method + " " + route.path + " with " + what);
    }
  }
  expect_nothing_started();
}

// Issue #11 §3a: the key and the route are checked as soon as the headers are
// in; a refused request's body is never read (here it is never even sent).
TEST_F(AccessTest, TheKeyAndTheRouteAreCheckedBeforeTheBody) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", kKey}));
  const std::string head_only = "Host: 127.0.0.1:" + std::to_string(port()) +
                                "\r\nContent-Type: application/json\r\n"
                                "Content-Length: 50000000\r\n\r\n";
  HttpReply no_key = raw_exchange(port(), "POST /api/v1/chat/completions HTTP/1.1\r\n" + head_only);
  expect_error(no_key, 401, "invalid_api_key", "chat without the key, body never sent");
  HttpReply no_route =
      raw_exchange(port(), "POST /api/v1/no-such-route HTTP/1.1\r\nAuthorization: Bearer " + kKey +
                               "\r\n" + head_only);
  EXPECT_EQ(no_route.status, 404) << no_route.body;
  HttpReply wrong_method = raw_exchange(
      port(), "PUT /api/v1/health HTTP/1.1\r\nAuthorization: Bearer " + kKey + "\r\n" + head_only);
  EXPECT_EQ(wrong_method.status, 405) << wrong_method.body;
  HttpReply media =
      raw_exchange(port(), "POST /api/v1/load HTTP/1.1\r\nAuthorization: Bearer " + kKey + "\r\n" +
                               "Host: 127.0.0.1:" + std::to_string(port()) +
                               "\r\nContent-Type: text/plain\r\n"
                               "Content-Length: 50000000\r\n\r\n");
  EXPECT_EQ(media.status, 415) << media.body;
  expect_nothing_started();
}

TEST_F(AccessTest, LiveNeverNeedsTheKey) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", kKey}));
  for (const char* path : {"/live", "/api/v1/live", "/v1/live"}) {
    HttpReply r = get(path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.json(), (nlohmann::json{{"status", "ok"}})) << path;
  }
}

TEST_F(AccessTest, TheRightKeyOpensTheRoutes) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", kKey}));
  const HeaderList auth = {{"Authorization", "Bearer " + kKey}};
  HttpReply h = get("/api/v1/health", auth);
  EXPECT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(h.json()["status"], "ok");
  HttpReply m = get("/api/v1/models", auth);
  EXPECT_EQ(m.status, 200) << m.body;
  EXPECT_NE(m.body.find("\"id\":\"a\""), std::string::npos) << m.body;
  EXPECT_EQ(get("/api/v1/stats", auth).status, 200);
  HttpReply c =
      post_json("/api/v1/chat/completions", chat_body("user.a", {{"max_tokens", 2}}).dump(), auth);
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.json()["choices"][0]["message"]["content"], "The quick");
  // The scheme name is case-insensitive (RFC 9110).
  EXPECT_EQ(get("/api/v1/health", {{"Authorization", "bearer " + kKey}}).status, 200);
}

TEST_F(AccessTest, HealthWithoutAuthOpensOnlyHealth) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", kKey, "--health-without-auth"}));
  HttpReply h = get("/api/v1/health");
  EXPECT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(h.json()["status"], "ok");
  expect_error(get("/api/v1/stats"), 401, "invalid_api_key", "stats");
  expect_error(get("/api/v1/models"), 401, "invalid_api_key", "models");
  expect_error(post_json("/api/v1/chat/completions", chat_body("user.a").dump()), 401,
               "invalid_api_key", "chat");
}

TEST_F(AccessTest, TheKeyFromTheEnvironmentWorksTheSame) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_API_KEY", kKey}}));
  expect_error(get("/api/v1/health"), 401, "invalid_api_key", "health");
  expect_error(get("/api/v1/health", {{"Authorization", "Bearer nope"}}), 401, "invalid_api_key",
               "health with a wrong key");
  expect_error(post_json("/api/v1/chat/completions", chat_body("user.a").dump()), 401,
               "invalid_api_key", "chat");
  EXPECT_EQ(get("/live").status, 200);
  const HeaderList auth = {{"Authorization", "Bearer " + kKey}};
  EXPECT_EQ(get("/api/v1/health", auth).status, 200);
  EXPECT_EQ(get("/api/v1/models", auth).status, 200);
  HttpReply c =
      post_json("/api/v1/chat/completions", chat_body("user.a", {{"max_tokens", 1}}).dump(), auth);
  EXPECT_EQ(c.status, 200) << c.body;
}

TEST_F(AccessTest, WithoutAKeyThereIsNoAuthentication) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_EQ(get("/api/v1/health").status, 200);
  EXPECT_EQ(get("/api/v1/stats", {{"Authorization", "Bearer whatever"}}).status, 200);
  EXPECT_EQ(post_json("/api/v1/chat/completions", chat_body("user.a").dump()).status, 200);
}

// ---- Origins and CORS ---------------------------------------------------

TEST_F(AccessTest, AForeignOriginIsRefusedByDefault) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const HeaderList evil = {{"Origin", "http://evil.example"}};
  HttpReply h = get("/api/v1/health", evil);
  expect_error(h, 403, "forbidden", "GET health from evil.example");
  EXPECT_FALSE(h.has_header("Access-Control-Allow-Origin"));
  EXPECT_NE(h.json()["error"].value("message", "").find("http://evil.example"), std::string::npos)
      << h.body;
  HttpReply c = post_json("/api/v1/chat/completions", chat_body("user.a").dump(), evil);
  expect_error(c, 403, "forbidden", "chat from evil.example");
  EXPECT_FALSE(c.has_header("Access-Control-Allow-Origin"));
  HttpReply l = post_json("/api/v1/load", R"({"model_name":"user.a"})", evil);
  expect_error(l, 403, "forbidden", "load from evil.example");
  HttpReply live = get("/live", evil);
  expect_error(live, 403, "forbidden", "live from evil.example");

  HttpReply pre =
      preflight("/api/v1/chat/completions", "http://evil.example", "POST", "content-type");
  expect_error(pre, 403, "forbidden", "preflight from evil.example");
  EXPECT_FALSE(pre.has_header("Access-Control-Allow-Origin"));
  EXPECT_FALSE(pre.has_header("Access-Control-Allow-Methods"));
  expect_nothing_started();
}

TEST_F(AccessTest, TheRoutersOwnOriginIsAllowed) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const HeaderList same = {{"Origin", "http://127.0.0.1:" + std::to_string(port())}};
  EXPECT_EQ(get("/api/v1/health", same).status, 200);
  HttpReply c =
      post_json("/api/v1/chat/completions", chat_body("user.a", {{"max_tokens", 1}}).dump(), same);
  EXPECT_EQ(c.status, 200) << c.body;
  HttpReply pre = preflight("/api/v1/chat/completions", same[0].second, "POST");
  EXPECT_EQ(pre.status, 204) << pre.body;
}

// DNS rebinding: a page on http://evil.example:PORT whose name the attacker
// has re-pointed at 127.0.0.1 makes the browser send Host: evil.example:PORT
// and Origin: http://evil.example:PORT. That is not the router's own origin
// (it serves http://127.0.0.1:PORT) and not listed, so it must be refused
// like any other foreign origin (docs/api.md, 403 forbidden) — otherwise
// any web page can load, unload and run models with JSON POSTs. Regression:
// the router once took its "own origin" from the request's Host header.
TEST_F(AccessTest, DnsRebindingOriginMatchingItsOwnHostHeaderIsRefused) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string site = "evil.example:" + std::to_string(port());
  const HeaderList rebound = {{"Host", site}, {"Origin", "http://" + site}};
  HttpReply h = get("/api/v1/health", rebound);
  expect_error(h, 403, "forbidden", "GET health from a rebound origin");
  HeaderList post = rebound;
  post.emplace_back("Content-Type", "application/json");
  HttpReply l = raw_request(port(), "POST", "/api/v1/load", post, R"({"model_name":"user.a"})");
  expect_error(l, 403, "forbidden", "POST load from a rebound origin");
  expect_nothing_started();
  // Without an Origin header (a rebound GET), the Host alone gives it away.
  HttpReply no_origin = get("/api/v1/health", {{"Host", site}});
  expect_error(no_origin, 403, "forbidden", "GET health with a foreign Host");
  // The router's own names still work.
  for (const std::string name : {"127.0.0.1", "localhost"}) {
    const std::string own = name + ":" + std::to_string(port());
    HttpReply ok = get("/api/v1/health", {{"Host", own}, {"Origin", "http://" + own}});
    EXPECT_EQ(ok.status, 200) << name << ": " << ok.body;
  }
}

TEST_F(AccessTest, AListedOriginGetsCorsHeaders) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--cors-origins", "http://app.example"}));
  const HeaderList app = {{"Origin", "http://app.example"}};
  HttpReply h = get("/api/v1/health", app);
  EXPECT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(h.header("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_NE(h.header("Vary").find("Origin"), std::string::npos) << h.header("Vary");

  HttpReply c =
      post_json("/api/v1/chat/completions", chat_body("user.a", {{"max_tokens", 1}}).dump(), app);
  EXPECT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.header("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_NE(c.header("Vary").find("Origin"), std::string::npos);

  // Errors carry the headers too, so the page can read them.
  HttpReply nf = post_json("/api/v1/chat/completions", chat_body("user.nope").dump(), app);
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(nf.header("Access-Control-Allow-Origin"), "http://app.example");

  HttpReply pre = preflight("/api/v1/chat/completions", "http://app.example", "POST",
                            "authorization, content-type");
  EXPECT_EQ(pre.status, 204) << pre.body;
  EXPECT_EQ(pre.header("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_NE(pre.header("Access-Control-Allow-Methods").find("POST"), std::string::npos)
      << pre.header("Access-Control-Allow-Methods");
  const std::string allowed_headers = pre.header("Access-Control-Allow-Headers");
  EXPECT_NE(allowed_headers.find("Authorization"), std::string::npos) << allowed_headers;
  EXPECT_NE(allowed_headers.find("Content-Type"), std::string::npos) << allowed_headers;

  const HeaderList other = {{"Origin", "http://other.example"}};
  HttpReply o = get("/api/v1/health", other);
  expect_error(o, 403, "forbidden", "health from other.example");
  EXPECT_FALSE(o.has_header("Access-Control-Allow-Origin"));
  HttpReply opre = preflight("/api/v1/chat/completions", other[0].second, "POST");
  expect_error(opre, 403, "forbidden", "preflight from other.example");
  // A listed origin is matched whole, not as a prefix.
  expect_error(get("/api/v1/health", {{"Origin", "http://app.example.evil.example"}}), 403,
               "forbidden", "health from app.example.evil.example");
}

TEST_F(AccessTest, AWildcardAllowsAnyOrigin) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--cors-origins", "*"}));
  HttpReply h = get("/api/v1/health", {{"Origin", "http://anything.example"}});
  EXPECT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(h.header("Access-Control-Allow-Origin"), "*");
  HttpReply pre = preflight("/api/v1/models", "http://else.example", "GET");
  EXPECT_EQ(pre.status, 204) << pre.body;
  EXPECT_EQ(pre.header("Access-Control-Allow-Origin"), "*");
}

TEST_F(AccessTest, APreflightNeverNeedsTheKey) {
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--api-key", kKey, "--cors-origins", "http://app.example"}));
  HttpReply pre = preflight("/api/v1/chat/completions", "http://app.example", "POST",
                            "authorization, content-type");
  EXPECT_EQ(pre.status, 204) << pre.body;
  EXPECT_EQ(pre.header("Access-Control-Allow-Origin"), "http://app.example");
  HttpReply pre_same = raw_request(port(), "OPTIONS", "/api/v1/models", {});
  EXPECT_EQ(pre_same.status, 204) << pre_same.body;
  // The request itself still needs it; its 401 carries the CORS headers.
  HttpReply h = get("/api/v1/models", {{"Origin", "http://app.example"}});
  expect_error(h, 401, "invalid_api_key", "models from app.example without the key");
  EXPECT_EQ(h.header("Access-Control-Allow-Origin"), "http://app.example");
  HttpReply ok = get("/api/v1/models",
                     {{"Origin", "http://app.example"}, {"Authorization", "Bearer " + kKey}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

// ---- CSRF: Content-Type ---------------------------------------------------

// Content types a cross-site HTML form (or a no-cors fetch) can send without
// a preflight; "" sends no Content-Type at all.
const std::vector<std::string> kSimpleTypes = {"text/plain", "text/plain;charset=UTF-8",
                                               "application/x-www-form-urlencoded",
                                               "multipart/form-data; boundary=xyz", ""};

TEST_F(AccessTest, ChatAndLoadRefuseNonJsonBodies) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::vector<std::pair<std::string, std::string>> posts = {
      {"/api/v1/chat/completions", chat_body("user.a").dump()},
      {"/api/v1/load", R"({"model_name":"user.a"})"},
      {"/api/v1/completions", R"({"model":"user.a","prompt":"x"})"},
  };
  for (const auto& [path, body] : posts) {
    for (const auto& type : kSimpleTypes) {
      HttpReply r = post_typed(path, type, body);
      expect_error(r, 415, "unsupported_media_type", path + " with Content-Type '" + type + "'");
    }
  }
  expect_nothing_started();

  HttpReply ok = raw_request(port(), "POST", "/api/v1/chat/completions",
                             {{"Content-Type", "application/json; charset=utf-8"}},
                             chat_body("user.a", {{"max_tokens", 1}}).dump());
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(AccessTest, UnloadRefusesNonJsonBodiesButAnEmptyOneUnloadsEverything) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  for (const std::string body : {R"({"model_name":"user.a"})", "{}"}) {
    for (const auto& type : kSimpleTypes) {
      HttpReply r = post_typed("/api/v1/unload", type, body);
      expect_error(r, 415, "unsupported_media_type",
                   "unload " + body + " with Content-Type '" + type + "'");
    }
  }
  EXPECT_EQ(loaded_names(health(port())), (std::vector<std::string>{"user.a"}))
      << "a refused unload unloaded the model";

  HttpReply all = raw_request(port(), "POST", "/api/v1/unload", {}, "");
  EXPECT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json()["message"], "All models unloaded successfully") << all.body;
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
}

TEST_F(AccessTest, TranscriptionsTakeOnlyMultipart) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const std::string type : {"application/json", "text/plain", ""}) {
    HttpReply r =
        post_typed("/api/v1/audio/transcriptions", type, R"({"model":"user.w","file":"AAAA"})");
    expect_error(r, 415, "unsupported_media_type", "transcriptions with '" + type + "'");
  }
  expect_nothing_started();
}

}  // namespace
}  // namespace lemon::testing
