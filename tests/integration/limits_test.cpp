// Request limits and body validation (issue #3): bodies over --max-body-size
// are refused with 413 (Content-Length and chunked), malformed or mistyped
// bodies with 400 naming the field, every error is exactly the envelope
// {"error":{"message","type","param","code"}}, and nothing is answered 200
// with an error body (a backend error mid-stream becomes an SSE error event
// in the envelope shape, then [DONE]).
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;

// Exactly {"error":{"message":str,"type":str,"param":str|null,"code":str}}.
::testing::AssertionResult is_exact_envelope(const nlohmann::json& j) {
  if (!is_error_envelope(j)) {
    return ::testing::AssertionFailure() << "not the error envelope: " << j.dump();
  }
  if (j["error"].size() != 4) {
    return ::testing::AssertionFailure()
           << "\"error\" must have exactly message/type/param/code: " << j.dump();
  }
  return ::testing::AssertionSuccess();
}

class LimitsTest : public RouterTest {
 protected:
  // Expects `status` with exactly the envelope and `code`/`param`; returns "error".
  nlohmann::json expect_error(const HttpReply& r, int status, const std::string& code,
                              const nlohmann::json& param, const std::string& what) {
    EXPECT_EQ(r.status, status) << what << ": " << r.error << r.body;
    EXPECT_NE(r.header("Content-Type").find("application/json"), std::string::npos) << what;
    auto j = r.json();
    EXPECT_TRUE(is_exact_envelope(j)) << what;
    if (!j.is_object() || !j.contains("error")) {
      return nlohmann::json::object();
    }
    EXPECT_EQ(j["error"]["code"], code) << what << ": " << r.body;
    if (!param.is_discarded()) {
      EXPECT_EQ(j["error"]["param"], param) << what << ": " << r.body;
    }
    return j["error"];
  }

  // A chat body for user.a whose message content pads it to about `size` bytes.
  static std::string padded_chat(std::size_t size) {
    auto body = chat_body("user.a", {{"max_tokens", 1}});
    body["messages"][0]["content"] = std::string(size, 'x');
    return body.dump();
  }

  static nlohmann::json any_param() { return nlohmann::json(nlohmann::json::value_t::discarded); }
};

TEST_F(LimitsTest, ABodyOverTheLimitIs413) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-body-size", "1", "--ctx-size", "300000"}));
  const std::string big = padded_chat(2 * kMiB);
  HttpReply r = raw_request(port(), "POST", "/api/v1/chat/completions",
                            {{"Content-Type", "application/json"}}, big);
  auto e = expect_error(r, 413, "payload_too_large", any_param(), "2 MiB with Content-Length");
  EXPECT_NE(e.value("message", "").find(std::to_string(kMiB)), std::string::npos)
      << "the message names the limit: " << e.dump();

  HttpReply chunked = raw_exchange(
      port(),
      raw_request_text(port(), "POST", "/api/v1/chat/completions",
                       {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}},
                       chunked_body(big, 64 * 1024)));
  expect_error(chunked, 413, "payload_too_large", any_param(), "2 MiB chunked");

  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
  EXPECT_EQ(router().count_log("starting "), 0);

  // Under the limit is fine, both ways: the limit is not refusing everything.
  const std::string fits = padded_chat(kMiB - 4096);
  HttpReply ok = raw_request(port(), "POST", "/api/v1/chat/completions",
                             {{"Content-Type", "application/json"}}, fits);
  EXPECT_EQ(ok.status, 200) << ok.error << ok.body.substr(0, 300);
  HttpReply ok_chunked = raw_exchange(
      port(),
      raw_request_text(port(), "POST", "/api/v1/chat/completions",
                       {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}},
                       chunked_body(fits, 100 * 1000)));
  EXPECT_EQ(ok_chunked.status, 200) << ok_chunked.error << ok_chunked.body.substr(0, 300);
}

TEST_F(LimitsTest, MalformedJsonIs400NamingTheParseError) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const char* path : {"/api/v1/chat/completions", "/api/v1/completions", "/api/v1/embeddings",
                           "/api/v1/responses", "/api/v1/load"}) {
    for (const char* body : {"{\"model\": \"user.a\",", "{'model': 'user.a'}", "not json"}) {
      auto e = expect_error(http_post(port(), path, std::string(body)), 400,
                            "invalid_request_error", any_param(), std::string(path) + " " + body);
      EXPECT_NE(e.value("message", "").find("parse error"), std::string::npos)
          << path << " " << body << ": " << e.dump();
    }
  }
  // Valid JSON that is not an object.
  expect_error(http_post(port(), "/api/v1/chat/completions", std::string("[1, 2]")), 400,
               "invalid_request_error", any_param(), "array body");
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
}

TEST_F(LimitsTest, TextThatIsNotUtf8Gets400WithAValidJsonBody) {
  // Bytes that are not UTF-8 inside JSON strings, raw over the socket: the
  // parse error quotes them, and the error writer must still produce JSON
  // (issue #11 §3), never a 500 from a throwing serializer.
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const HeaderList json_type = {{"Content-Type", "application/json"}};
  const std::vector<std::string> bodies = {
      "{\"model\":\"\xff\xfe\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
      "{\"model\":\"user.a\",\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\x28\"}]}",
      "{\"model\":\"user.\xed\xa0\x80\"}",  // an encoded surrogate
      "{\"model\":\"\\udc00\"}",            // a lone surrogate escape
      "{\"\xf5\x80\x80\x80\":1}",           // a key past U+10FFFF
  };
  for (const char* path : {"/api/v1/chat/completions", "/api/v1/load", "/api/v1/pull"}) {
    for (const auto& body : bodies) {
      HttpReply r = raw_request(port(), "POST", path, json_type, body);
      EXPECT_EQ(r.status, 400) << path << ": " << r.body;
      EXPECT_TRUE(nlohmann::json::accept(r.body)) << path << ": not JSON: " << r.body;
      EXPECT_TRUE(is_exact_envelope(r.json())) << path << ": " << r.body;
    }
  }
  // In a header that ends up in the message: an unsupported Content-Type.
  HttpReply typed =
      raw_request(port(), "POST", "/api/v1/chat/completions",
                  {{"Content-Type", "application/\xff\xfejson"}}, chat_body("user.a").dump());
  EXPECT_GE(typed.status, 400) << typed.body;
  EXPECT_LT(typed.status, 500) << typed.body;
  EXPECT_TRUE(nlohmann::json::accept(typed.body)) << typed.body;
  // The router is still serving.
  EXPECT_EQ(health(port())["status"], "ok");
}

TEST_F(LimitsTest, MissingOrMistypedFieldsAre400NamingTheField) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string path = "/api/v1/chat/completions";
  auto without_model = chat_body("user.a");
  without_model.erase("model");
  expect_error(http_post(port(), path, without_model), 400, "invalid_request_error", "model",
               "no model");
  expect_error(http_post(port(), path, chat_body("user.a", {{"model", 7}})), 400,
               "invalid_request_error", "model", "numeric model");
  for (const auto& stream : {nlohmann::json("yes"), nlohmann::json(1), nlohmann::json("true")}) {
    expect_error(http_post(port(), path, chat_body("user.a", {{"stream", stream}})), 400,
                 "invalid_request_error", "stream", "stream " + stream.dump());
  }
  for (const auto& messages :
       {nlohmann::json::array(), nlohmann::json("hi"), nlohmann::json::array({"hi"})}) {
    expect_error(http_post(port(), path, chat_body("user.a", {{"messages", messages}})), 400,
                 "invalid_request_error", "messages", "messages " + messages.dump());
  }
  expect_error(http_post(port(), path, chat_body("user.a", {{"max_tokens", "ten"}})), 400,
               "invalid_request_error", "max_tokens", "max_tokens ten");
  auto no_prompt = nlohmann::json{{"model", "user.a"}};
  expect_error(http_post(port(), "/api/v1/completions", no_prompt), 400, "invalid_request_error",
               "prompt", "completions without prompt");
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
  EXPECT_EQ(router().count_log("starting "), 0);
}

TEST_F(LimitsTest, EveryErrorIsExactlyTheEnvelope) {
  env_.add_llm("a");
  env_.add_missing_llm("gone");
  ASSERT_NO_FATAL_FAILURE(start_router());
  struct Case {
    std::string method;
    std::string path;
    std::string body;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET", "/api/v1/nowhere", "", 404},
      {"GET", "/api/v1/chat/completions", "", 405},
      {"POST", "/api/v1/health", "{}", 405},
      {"GET", "/api/v1/models/user.nope", "", 404},
      {"POST", "/api/v1/chat/completions", chat_body("user.nope").dump(), 404},
      {"POST", "/api/v1/chat/completions", chat_body("user.gone").dump(), 404},
      {"POST", "/api/v1/unload", R"({"model_name":"user.a"})", 404},
      {"POST", "/api/v1/load", R"({"model_name":"user.a","llamacpp_args":"--port 1"})", 400},
      {"POST", "/api/v1/load", "{}", 400},
      {"POST", "/api/v1/chat/completions", "{", 400},
  };
  for (const auto& c : cases) {
    HttpReply r = http_request(port(), c.method, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.path << " " << c.body << ": " << r.body;
    EXPECT_TRUE(is_exact_envelope(r.json())) << c.method << " " << c.path << " " << c.body;
  }
}

TEST_F(LimitsTest, ABackendErrorMidStreamIsAnEnvelopeEventThenDone) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"stream_error_after_chunks", 2}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const char* path : {"/api/v1/chat/completions", "/api/v1/completions"}) {
    nlohmann::json body =
        std::string(path).find("chat") != std::string::npos
            ? chat_body("user.a", {{"stream", true}, {"max_tokens", 6}})
            : nlohmann::json{
                  {"model", "user.a"}, {"prompt", "x"}, {"stream", true}, {"max_tokens", 6}};
    SseStream s(port(), path, body.dump());
    ASSERT_TRUE(s.read_head()) << path;
    EXPECT_EQ(s.status(), 200) << path;
    auto events = s.rest();
    EXPECT_TRUE(s.ended_cleanly()) << path;
    ASSERT_EQ(events.size(), 4u) << path << ": 2 chunks, the error event and [DONE]";
    for (int i = 0; i < 2; ++i) {
      auto chunk = nlohmann::json::parse(events[i].data, nullptr, false);
      EXPECT_FALSE(chunk.contains("error")) << events[i].data;
    }
    auto error = nlohmann::json::parse(events[2].data, nullptr, false);
    EXPECT_TRUE(is_exact_envelope(error)) << path << ": " << events[2].data;
    EXPECT_EQ(error["error"]["message"], "Context size has been exceeded.") << events[2].data;
    EXPECT_EQ(error["error"]["code"], "exceed_context_size_error") << events[2].data;
    EXPECT_TRUE(events[3].is_done()) << path << ": " << events[3].data;
  }
}

TEST_F(LimitsTest, ABackendErrorBeforeTheStreamKeepsItsStatus) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"error_status", {{"status", 500}, {"message", "out of memory"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (bool stream : {false, true}) {
    SseStream s(port(), "/api/v1/chat/completions",
                chat_body("user.a", {{"stream", stream}}).dump());
    ASSERT_TRUE(s.read_head());
    EXPECT_EQ(s.status(), 500) << "stream " << stream << ": an error is never a 200";
    auto j = nlohmann::json::parse(s.read_body(), nullptr, false);
    EXPECT_TRUE(is_exact_envelope(j)) << "stream " << stream;
    EXPECT_EQ(j["error"]["message"], "out of memory") << j.dump();
    EXPECT_EQ(j["error"]["type"], "server_error") << j.dump();
  }
}

}  // namespace
}  // namespace lemon::testing
