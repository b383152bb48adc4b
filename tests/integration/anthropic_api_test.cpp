// The Anthropic Messages API (issue #14 §3, docs/api.md "Anthropic Messages
// API") against the real router and the fake llama-server: /v1/messages and
// /api/v1/messages with and without streaming, Anthropic's event sequence,
// stop sequences, tool use, count_tokens, Anthropic's error envelope (from
// the router's own checks, the backend's errors and a stream that breaks),
// keepalive pings while a model loads, and x-api-key next to the bearer
// token (--api-key, LEMONADE_API_KEY).
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

const std::string kApiKey = "s3cret";

json message_body(const std::string& model, const json& extra = json::object()) {
  json body = {{"model", model},
               {"max_tokens", 4},
               {"messages", {{{"role", "user"}, {"content", "Say something"}}}}};
  body.update(extra);
  return body;
}

const json kWeatherTool = {{"name", "get_weather"},
                           {"description", "The weather in a city"},
                           {"input_schema",
                            {{"type", "object"},
                             {"properties", {{"city", {{"type", "string"}}}}},
                             {"required", {"city"}}}}};

class AnthropicApiTest : public RouterTest {
 protected:
  HttpReply post(const std::string& path, const json& body, HeaderList headers = {}) {
    headers.emplace_back("Content-Type", "application/json");
    headers.emplace_back("anthropic-version", "2023-06-01");
    return raw_request(port(), "POST", path, headers, body.dump());
  }

  // A streamed answer's events; fails the test unless it is a 200 event stream
  // that ends cleanly.
  std::vector<SseEvent> stream(const json& body, const std::string& path = "/v1/messages") {
    SseStream s(port(), "POST", path, body.dump(), {{"anthropic-version", "2023-06-01"}});
    EXPECT_TRUE(s.read_head());
    EXPECT_EQ(s.status(), 200);
    EXPECT_NE(s.header("content-type").find("text/event-stream"), std::string::npos);
    auto events = s.rest();
    EXPECT_TRUE(s.ended_cleanly());
    return events;
  }

  // The backend's view of the last chat request (the fake's /fake/state).
  json backend_request(const std::string& model) {
    auto url = loaded_field(health(port()), model, "backend_url");
    EXPECT_TRUE(url.is_string());
    return url.is_string() ? fake_state(url.get<std::string>())["last_request"] : json();
  }
};

// {"type":"error","error":{"type","message"}} and nothing else.
void expect_anthropic_error(const HttpReply& r, int status, const std::string& type,
                            const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.error << r.body;
  json j = r.json();
  ASSERT_TRUE(j.is_object()) << what << ": " << r.body;
  EXPECT_EQ(j.size(), 2u) << what << ": " << r.body;
  EXPECT_EQ(j["type"], "error") << what << ": " << r.body;
  ASSERT_TRUE(j["error"].is_object()) << what << ": " << r.body;
  EXPECT_EQ(j["error"]["type"], type) << what << ": " << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string()) << what << ": " << r.body;
}

std::vector<std::string> event_names(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    if (!e.is_comment()) {
      out.push_back(e.event);
    }
  }
  return out;
}

json data_of(const SseEvent& e) {
  return json::parse(e.data, nullptr, false);
}

TEST_F(AnthropicApiTest, AMessageWithoutStreaming) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const char* path : {"/v1/messages", "/api/v1/messages"}) {
    HttpReply r = post(path, message_body("user.a"));
    ASSERT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_NE(r.header("Content-Type").find("application/json"), std::string::npos);
    json m = r.json();
    EXPECT_EQ(m["type"], "message") << r.body;
    EXPECT_EQ(m["role"], "assistant");
    EXPECT_EQ(m["model"], "user.a");
    EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u) << r.body;
    EXPECT_EQ(m["content"], json::parse(R"([{"type": "text", "text": "The quick brown fox"}])"));
    EXPECT_EQ(m["stop_reason"], "max_tokens");
    EXPECT_EQ(m["stop_sequence"], nullptr);
    EXPECT_EQ(m["usage"]["output_tokens"], 4);
    EXPECT_GT(m["usage"]["input_tokens"].get<int>(), 0);
  }
  // What the backend was asked: a chat completion stream with the system
  // prompt first and the sampling fields carried over.
  HttpReply r =
      post("/v1/messages",
           message_body("user.a", {{"system", "Be brief."}, {"temperature", 0.5}, {"top_k", 7}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json sent = backend_request("user.a");
  EXPECT_EQ(sent["messages"][0], json({{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(sent["max_tokens"], 4);
  EXPECT_EQ(sent["temperature"], 0.5);
  EXPECT_EQ(sent["top_k"], 7);
  EXPECT_EQ(sent["stream"], true);
}

TEST_F(AnthropicApiTest, StreamingFollowsAnthropicsEventSequence) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto events = stream(message_body("user.a", {{"max_tokens", 3}, {"stream", true}}));
  EXPECT_EQ(
      event_names(events),
      (std::vector<std::string>{"message_start", "ping", "content_block_start",
                                "content_block_delta", "content_block_delta", "content_block_delta",
                                "content_block_stop", "message_delta", "message_stop"}));
  std::string text;
  json delta;
  for (const auto& e : events) {
    json d = data_of(e);
    ASSERT_TRUE(d.is_object()) << e.data;
    EXPECT_EQ(d["type"], e.event);
    if (e.event == "message_start") {
      EXPECT_EQ(d["message"]["model"], "user.a");
      EXPECT_EQ(d["message"]["content"], json::array());
    } else if (e.event == "content_block_delta") {
      EXPECT_EQ(d["index"], 0);
      EXPECT_EQ(d["delta"]["type"], "text_delta");
      text += d["delta"]["text"].get<std::string>();
    } else if (e.event == "message_delta") {
      delta = d;
    }
    EXPECT_FALSE(e.is_done()) << "Anthropic's streams have no [DONE]";
  }
  EXPECT_EQ(text, "The quick brown");
  EXPECT_EQ(delta["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(delta["usage"]["output_tokens"], 3);
}

TEST_F(AnthropicApiTest, StopSequencesEndTheAnswer) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const json stop = {{"max_tokens", 8}, {"stop_sequences", {"fox", "never"}}};
  HttpReply r = post("/v1/messages", message_body("user.a", stop));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["content"][0]["text"], "The quick brown ");
  EXPECT_EQ(r.json()["stop_reason"], "stop_sequence");
  EXPECT_EQ(r.json()["stop_sequence"], "fox");
  EXPECT_FALSE(backend_request("user.a").contains("stop")) << "the router watches for them";

  json streamed = message_body("user.a", stop);
  streamed["stream"] = true;
  auto events = stream(streamed);
  std::string text;
  for (const auto& e : events) {
    json d = data_of(e);
    if (e.event == "content_block_delta") {
      text += d["delta"]["text"].get<std::string>();
    } else if (e.event == "message_delta") {
      EXPECT_EQ(d["delta"], json({{"stop_reason", "stop_sequence"}, {"stop_sequence", "fox"}}));
    }
  }
  EXPECT_EQ(text, "The quick brown ");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "message_stop");
}

TEST_F(AnthropicApiTest, ToolUseWithAndWithoutStreaming) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const json tools = {{"tools", {kWeatherTool}}, {"tool_choice", {{"type", "any"}}}};
  HttpReply r = post("/v1/messages", message_body("user.a", tools));
  ASSERT_EQ(r.status, 200) << r.body;
  json m = r.json();
  ASSERT_EQ(m["content"].size(), 1u) << r.body;
  EXPECT_EQ(m["content"][0]["type"], "tool_use");
  EXPECT_EQ(m["content"][0]["name"], "get_weather");
  EXPECT_EQ(m["content"][0]["input"], json({{"city", "fake-city"}}));
  EXPECT_TRUE(m["content"][0]["id"].is_string());
  EXPECT_EQ(m["stop_reason"], "tool_use");
  json sent = backend_request("user.a");
  EXPECT_EQ(sent["tool_choice"], "required");
  EXPECT_EQ(sent["tools"][0]["function"]["name"], "get_weather");

  json streamed = message_body("user.a", tools);
  streamed["stream"] = true;
  auto events = stream(streamed);
  std::string partial;
  bool started = false;
  json delta;
  for (const auto& e : events) {
    json d = data_of(e);
    if (e.event == "content_block_start") {
      EXPECT_EQ(d["content_block"]["type"], "tool_use") << e.data;
      EXPECT_EQ(d["content_block"]["name"], "get_weather") << e.data;
      started = true;
    } else if (e.event == "content_block_delta") {
      EXPECT_EQ(d["delta"]["type"], "input_json_delta") << e.data;
      partial += d["delta"]["partial_json"].get<std::string>();
    } else if (e.event == "message_delta") {
      delta = d["delta"];
    }
  }
  EXPECT_TRUE(started);
  EXPECT_EQ(json::parse(partial, nullptr, false), json({{"city", "fake-city"}})) << partial;
  EXPECT_EQ(delta["stop_reason"], "tool_use");
}

// A tool's result goes back to the backend as a tool message answering the
// assistant's call.
TEST_F(AnthropicApiTest, ToolResultsGoBackAsToolMessages) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const json messages = json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": [
      {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C"}]}])");
  HttpReply r = post("/v1/messages",
                     message_body("user.a", {{"messages", messages}, {"tools", {kWeatherTool}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["content"][0]["type"], "text");
  json sent = backend_request("user.a")["messages"];
  ASSERT_EQ(sent.size(), 3u) << sent.dump();
  EXPECT_EQ(sent[1]["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(sent[2], json({{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "18 C"}}));
}

TEST_F(AnthropicApiTest, CountTokensUsesTheBackendsTokenizer) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  // "user: hello big world\n": four words and the BOS (the fake's tokenizer).
  const json body = {{"model", "user.a"},
                     {"messages", {{{"role", "user"}, {"content", "hello big world"}}}}};
  HttpReply r = post("/v1/messages/count_tokens", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json(), json({{"input_tokens", 5}}));
  HttpReply longer = post("/api/v1/messages/count_tokens",
                          {{"model", "user.a"},
                           {"system", "Be brief."},
                           {"messages", {{{"role", "user"}, {"content", "hello big world"}}}}});
  ASSERT_EQ(longer.status, 200) << longer.body;
  EXPECT_EQ(longer.json()["input_tokens"], 8);
  expect_anthropic_error(post("/v1/messages/count_tokens", {{"model", "user.a"}}), 400,
                         "invalid_request_error", "no messages");
}

TEST_F(AnthropicApiTest, ErrorsUseAnthropicsEnvelope) {
  env_.add_llm("a");
  env_.add_embedding("e");
  const std::string broken = env_.add_llm("broken");
  env_.write_sidecar(broken, {{"error_status", {{"status", 500}, {"message", "kaboom"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  json no_max = message_body("user.a");
  no_max.erase("max_tokens");
  expect_anthropic_error(post("/v1/messages", no_max), 400, "invalid_request_error",
                         "no max_tokens");
  EXPECT_NE(post("/v1/messages", no_max).body.find("max_tokens"), std::string::npos);
  expect_anthropic_error(
      post("/v1/messages", message_body("user.a", {{"mcp_servers", json::array()}})), 400,
      "invalid_request_error", "an unsupported field");
  expect_anthropic_error(post("/v1/messages", message_body("user.nope")), 404, "not_found_error",
                         "an unknown model");
  expect_anthropic_error(post("/v1/messages", message_body("user.e")), 400, "invalid_request_error",
                         "an embedding model");
  expect_anthropic_error(raw_request(port(), "POST", "/v1/messages",
                                     {{"Content-Type", "application/json"}}, "{not json"),
                         400, "invalid_request_error", "malformed JSON");
  HttpReply get = raw_request(port(), "GET", "/v1/messages", {});
  expect_anthropic_error(get, 405, "invalid_request_error", "a wrong method");
  EXPECT_EQ(get.header("Allow"), "POST");
  HttpReply backend = post("/v1/messages", message_body("user.broken"));
  expect_anthropic_error(backend, 500, "api_error", "the backend's error");
  EXPECT_NE(backend.body.find("kaboom"), std::string::npos) << backend.body;
}

TEST_F(AnthropicApiTest, AStreamThatBreaksEndsWithAnErrorEvent) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"stream_error_after_chunks", 2}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto events = stream(message_body("user.a", {{"max_tokens", 6}, {"stream", true}}));
  ASSERT_FALSE(events.empty());
  int deltas = 0;
  for (const auto& e : events) {
    deltas += e.event == "content_block_delta" ? 1 : 0;
  }
  EXPECT_EQ(deltas, 2);
  const SseEvent& last = events.back();
  EXPECT_EQ(last.event, "error");
  json d = data_of(last);
  EXPECT_EQ(d["type"], "error") << last.data;
  EXPECT_TRUE(d["error"]["type"].is_string()) << last.data;
  EXPECT_NE(d["error"]["message"].get<std::string>().find("Context size"), std::string::npos)
      << last.data;
}

TEST_F(AnthropicApiTest, PingsKeepAStreamAliveWhileTheModelLoads) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"startup_delay_ms", 2500}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto events = stream(message_body("user.a", {{"max_tokens", 2}, {"stream", true}}));
  auto names = event_names(events);
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "message_start");
  std::size_t pings = 0;
  while (1 + pings < names.size() && names[1 + pings] == "ping") {
    ++pings;
  }
  EXPECT_GE(pings, 2u) << "one when the stream opens, then one per keepalive";
  ASSERT_LT(1 + pings, names.size());
  EXPECT_EQ(names[1 + pings], "content_block_start");
  EXPECT_EQ(names.back(), "message_stop");
}

TEST_F(AnthropicApiTest, XApiKeyOrBearerWithApiKey) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", kApiKey}));
  expect_anthropic_error(post("/v1/messages", message_body("user.a")), 401, "authentication_error",
                         "no key");
  expect_anthropic_error(post("/v1/messages", message_body("user.a"), {{"x-api-key", "wrong"}}),
                         401, "authentication_error", "a wrong x-api-key");
  expect_anthropic_error(
      post("/v1/messages/count_tokens", {{"model", "user.a"}, {"messages", json::array()}}), 401,
      "authentication_error", "count_tokens without the key");
  HttpReply with_x = post("/v1/messages", message_body("user.a"), {{"x-api-key", kApiKey}});
  EXPECT_EQ(with_x.status, 200) << with_x.body;
  HttpReply with_bearer =
      post("/api/v1/messages", message_body("user.a"), {{"Authorization", "Bearer " + kApiKey}});
  EXPECT_EQ(with_bearer.status, 200) << with_bearer.body;
  // x-api-key is Anthropic's header: the OpenAI routes still want the bearer token.
  HttpReply openai = raw_request(port(), "POST", "/v1/chat/completions",
                                 {{"Content-Type", "application/json"}, {"x-api-key", kApiKey}},
                                 chat_body("user.a").dump());
  EXPECT_EQ(openai.status, 401) << openai.body;
}

TEST_F(AnthropicApiTest, XApiKeyWithTheKeyFromTheEnvironment) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_API_KEY", kApiKey}}));
  expect_anthropic_error(post("/v1/messages", message_body("user.a")), 401, "authentication_error",
                         "no key");
  HttpReply ok = post("/v1/messages", message_body("user.a"), {{"x-api-key", kApiKey}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

}  // namespace
}  // namespace lemon::testing
