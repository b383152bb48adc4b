// The error contract (issue #2 §7.11): every error is the envelope
// {"error":{"message","type","param","code"}} with the right status.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

class ErrorsTest : public RouterTest {
 protected:
  // Expects `r` to be `status` with the envelope and returns its "error".
  nlohmann::json expect_error(const HttpReply& r, int status, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.error << r.body;
    EXPECT_NE(r.header("Content-Type").find("application/json"), std::string::npos);
    auto j = r.json();
    EXPECT_TRUE(is_error_envelope(j)) << r.body;
    if (!code.empty()) {
      EXPECT_EQ(j["error"]["code"], code) << r.body;
    }
    return j.is_object() && j.contains("error") ? j["error"] : nlohmann::json::object();
  }
  std::string message(const nlohmann::json& error) { return error.value("message", ""); }
};

TEST_F(ErrorsTest, GetOnAPostRouteIs405WithAllow) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = http_get(port(), "/v1/chat/completions");
  expect_error(r, 405, "method_not_allowed");
  EXPECT_EQ(r.header("Allow"), "POST");
}

TEST_F(ErrorsTest, HeadOnAPostRouteIs405WithAllow) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = http_request(port(), "HEAD", "/api/v1/load");
  EXPECT_EQ(r.status, 405) << r.error;
  EXPECT_EQ(r.header("Allow"), "POST");
  EXPECT_TRUE(r.body.empty()) << "HEAD has no body";
}

TEST_F(ErrorsTest, AnUnknownRouteIs404Envelope) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto e = expect_error(http_get(port(), "/api/v1/no-such-route"), 404, "not_found");
  EXPECT_NE(message(e).find("/api/v1/no-such-route"), std::string::npos);
  expect_error(http_post(port(), "/nowhere", std::string("{}")), 404, "not_found");
}

TEST_F(ErrorsTest, ChatWithAnUnknownModelIs404ModelNotFound) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto e = expect_error(chat(port(), "user.nope"), 404, "model_not_found");
  EXPECT_EQ(e["param"], "model");
  EXPECT_NE(message(e).find("user.nope"), std::string::npos);
  expect_error(load(port(), "user.nope"), 404, "model_not_found");
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
}

TEST_F(ErrorsTest, ABackendErrorStatusPassesThrough) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"error_status", {{"status", 400}, {"message", "prompt is too long"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto e = expect_error(chat(port(), "user.a"), 400, "");
  EXPECT_EQ(message(e), "prompt is too long");

  // Streaming: the status is still known before anything was sent.
  SseStream s(port(), "/api/v1/chat/completions", chat_body("user.a", {{"stream", true}}).dump());
  ASSERT_TRUE(s.read_head());
  EXPECT_EQ(s.status(), 400);
  auto j = nlohmann::json::parse(s.read_body(), nullptr, false);
  EXPECT_TRUE(is_error_envelope(j)) << j.dump();
  EXPECT_EQ(j["error"]["message"], "prompt is too long");
}

TEST_F(ErrorsTest, ABackend5xxPassesThrough) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"error_status", {{"status", 503}, {"message", "slots are busy"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto e = expect_error(chat(port(), "user.a"), 503, "");
  EXPECT_EQ(message(e), "slots are busy");
  EXPECT_EQ(e["type"], "server_error");
}

TEST_F(ErrorsTest, MalformedJsonIs400NamingTheParseError) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const char* path : {"/api/v1/chat/completions", "/api/v1/load"}) {
    auto e = expect_error(http_post(port(), path, std::string("{\"model\": \"user.a\",")), 400,
                          "invalid_request_error");
    EXPECT_NE(message(e).find("parse error"), std::string::npos) << path << ": " << message(e);
  }
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
}

TEST_F(ErrorsTest, ANonBooleanStreamIs400) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto e = expect_error(chat(port(), "user.a", {{"stream", "yes"}}), 400, "invalid_request_error");
  EXPECT_EQ(e["param"], "stream");
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
}

TEST_F(ErrorsTest, ChatOnAnEmbeddingModelIs400BeforeAnythingLoads) {
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto e = expect_error(chat(port(), "user.e"), 400, "");
  EXPECT_NE(message(e).find("embedding"), std::string::npos) << message(e);
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
  EXPECT_EQ(router().count_log("starting "), 0);
}

}  // namespace
}  // namespace lemon::testing
