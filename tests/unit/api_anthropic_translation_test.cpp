// The Anthropic Messages API translation (issue #14 §3): requests as the
// backend's chat completions body (anthropic_request.h), the backend's chat
// completion chunks as Anthropic's message and event stream
// (anthropic_answer.h), and Anthropic's error envelope (api_dialect.h). The
// pairs are written as Anthropic's Messages API reference shows its requests
// and answers, and as llama-server streams its chunks.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "lemon/api/anthropic/anthropic_answer.h"
#include "lemon/api/anthropic/anthropic_request.h"
#include "lemon/http/api_dialect.h"

namespace lemon::http {
namespace {

using api::anthropic_count_tokens_text;
using api::anthropic_to_chat;
using api::AnthropicAnswer;
using inference::ChatAnswer;
using nlohmann::json;
using namespace std::chrono_literals;
using Clock = ChatAnswer::Clock;

const Clock::time_point kT0 = Clock::time_point(1000s);

// ---- requests ----------------------------------------------------------------------

TEST(HttpAnthropicRequest, TranslatesARecordedRequest) {
  const json request = json::parse(R"({
    "model": "user.chat",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
      {"role": "user", "content": "What is the weather in Paris?"},
      {"role": "assistant", "content": [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}
      ]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "18 C, sunny"},
        {"type": "text", "text": "And a picture?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
      ]}
    ],
    "tools": [{"name": "get_weather", "description": "Current weather",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                "required": ["city"]}}],
    "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
    "stop_sequences": ["\n\nHuman:"],
    "temperature": 0.2, "top_p": 0.9, "top_k": 40,
    "stream": true,
    "metadata": {"user_id": "u-1"}
  })");
  const json expected = json::parse(R"({
    "model": "user.chat",
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "What is the weather in Paris?"},
      {"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "toolu_01A", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "toolu_01A", "content": "18 C, sunny"},
      {"role": "user", "content": [
        {"type": "text", "text": "And a picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}
    ],
    "max_tokens": 1024, "temperature": 0.2, "top_p": 0.9, "top_k": 40,
    "stream": true, "stream_options": {"include_usage": true},
    "tools": [{"type": "function", "function": {
      "name": "get_weather", "description": "Current weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                     "required": ["city"]}}}],
    "tool_choice": "auto", "parallel_tool_calls": false
  })");
  auto out = anthropic_to_chat(request);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->chat, expected) << out->chat.dump(2);
  EXPECT_EQ(out->model, "user.chat");
  EXPECT_TRUE(out->stream);
  EXPECT_TRUE(out->has_images);
  EXPECT_EQ(out->stop_sequences, std::vector<std::string>{"\n\nHuman:"});
}

TEST(HttpAnthropicRequest, AlwaysAsksTheBackendForAStreamWithUsage) {
  auto out = anthropic_to_chat(
      {{"model", "m"}, {"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_FALSE(out->stream);
  EXPECT_EQ(out->chat["stream"], true);
  EXPECT_EQ(out->chat["stream_options"], json({{"include_usage", true}}));
  EXPECT_FALSE(out->chat.contains("stop"));
  EXPECT_FALSE(out->has_images);
}

TEST(HttpAnthropicRequest, ToolChoicesThinkingAndErrorResults) {
  const json base = {{"model", "m"},
                     {"max_tokens", 5},
                     {"messages",
                      {{{"role", "user"},
                        {"content",
                         {{{"type", "tool_result"},
                           {"tool_use_id", "t1"},
                           {"is_error", true},
                           {"content", {{{"type", "text"}, {"text", "boom"}}}}}}}}}}};
  json any = base;
  any["tool_choice"] = {{"type", "any"}};
  any["thinking"] = {{"type", "enabled"}, {"budget_tokens", 2048}};
  auto out = anthropic_to_chat(any);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->chat["tool_choice"], "required");
  EXPECT_EQ(out->chat["chat_template_kwargs"], json({{"enable_thinking", true}}));
  EXPECT_EQ(out->chat["messages"][0],
            json({{"role", "tool"}, {"tool_call_id", "t1"}, {"content", "Error: boom"}}));

  json named = base;
  named["tool_choice"] = {{"type", "tool"}, {"name", "get_weather"}};
  out = anthropic_to_chat(named);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->chat["tool_choice"],
            json({{"type", "function"}, {"function", {{"name", "get_weather"}}}}));

  json assistant = base;
  assistant["messages"] = json::parse(R"([{"role": "assistant", "content": [
      {"type": "thinking", "thinking": "Hmm.", "signature": "sig"},
      {"type": "tool_use", "id": "t2", "name": "f", "input": {}}]}])");
  out = anthropic_to_chat(assistant);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->chat["messages"][0], json::parse(R"({"role": "assistant", "content": null,
      "reasoning_content": "Hmm.", "tool_calls": [{"id": "t2", "type": "function",
      "function": {"name": "f", "arguments": "{}"}}]})"));
}

// Each refusal names the field, as Anthropic's invalid_request_error does.
TEST(HttpAnthropicRequest, RefusesWhatItCannotHonourNamingTheField) {
  const json ok = {
      {"model", "m"}, {"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  struct Case {
    json patch;  // merged into `ok`
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"max_tokens", nullptr}}, "max_tokens"},
      {{{"max_tokens", 0}}, "max_tokens"},
      {{{"model", 3}}, "model"},
      {{{"messages", json::array()}}, "messages"},
      {{{"messages", {{{"role", "system"}, {"content", "x"}}}}}, "messages[0].role"},
      {{{"temperature", 1.5}}, "temperature"},
      {{{"top_k", -1}}, "top_k"},
      {{{"stream", "yes"}}, "stream"},
      {{{"stop_sequences", {""}}}, "stop_sequences"},
      {{{"mcp_servers", json::array()}}, "mcp_servers"},
      {{{"tools", {{{"type", "web_search_20250305"}, {"name", "web_search"}}}}}, "tools[0].type"},
      {{{"tool_choice", {{"type", "sometimes"}}}}, "tool_choice.type"},
      {{{"messages",
         {{{"role", "user"},
           {"content",
            {{{"type", "image"}, {"source", {{"type", "url"}, {"url", "https://x/y.png"}}}}}}}}}},
       "messages[0].content[0].source.type"},
      {{{"messages",
         {{{"role", "user"},
           {"content",
            {{{"type", "document"},
              {"source", {{"type", "text"}, {"media_type", "text/plain"}, {"data", "x"}}}}}}}}}},
       "messages[0].content[0].type"},
      {{{"messages",
         {{{"role", "user"}, {"content", {{{"type", "tool_use"}, {"id", "a"}, {"name", "f"}}}}}}}},
       "messages[0].content[0].type"},
  };
  for (const Case& c : cases) {
    json body = ok;
    body.update(c.patch);
    auto out = anthropic_to_chat(body);
    ASSERT_FALSE(out.ok()) << body.dump();
    EXPECT_EQ(out.error().code(), ErrorCode::kInvalidRequest) << body.dump();
    EXPECT_EQ(out.error().param(), c.param) << body.dump() << ": " << out.error().message();
  }
}

TEST(HttpAnthropicRequest, CountTokensTextCoversSystemMessagesAndTools) {
  const json body = json::parse(R"({
    "model": "user.chat",
    "system": "Be brief.",
    "messages": [
      {"role": "user", "content": "Hello there"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}}]}
    ],
    "tools": [{"name": "f", "input_schema": {"type": "object"}}]
  })");
  auto out = anthropic_count_tokens_text(body);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->model, "user.chat");
  EXPECT_EQ(out->text,
            "system: Be brief.\nuser: Hello there\nassistant: \nf {\"a\":1}\n"
            "[{\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}},"
            "\"type\":\"function\"}]\n");
  // max_tokens belongs to messages, not to count_tokens.
  json with_max = body;
  with_max["max_tokens"] = 5;
  auto refused = anthropic_count_tokens_text(with_max);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().param(), "max_tokens");
}

// ---- answers -----------------------------------------------------------------------

json chunk(const json& delta, const json& finish = nullptr) {
  return {{"object", "chat.completion.chunk"},
          {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
}

json final_chunk(const std::string& finish, int prompt, int completion) {
  json c = chunk(json::object(), finish);
  c["usage"] = {{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion}};
  return c;
}

// "event: NAME\ndata: JSON\n\n"... as (NAME, JSON) pairs; fails on other text.
std::vector<std::pair<std::string, json>> events(const std::string& text) {
  std::vector<std::pair<std::string, json>> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find("\n\n", start);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated event: " << text.substr(start);
      break;
    }
    const std::string ev = text.substr(start, end - start);
    start = end + 2;
    const std::size_t nl = ev.find('\n');
    if (ev.rfind("event: ", 0) != 0 || nl == std::string::npos ||
        ev.compare(nl + 1, 6, "data: ") != 0) {
      ADD_FAILURE() << "not an Anthropic event: " << ev;
      continue;
    }
    out.emplace_back(ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7)));
  }
  return out;
}

// Feeds `chunks` to a streaming answer: every event, from open() to close().
std::vector<std::pair<std::string, json>> stream(AnthropicAnswer& a,
                                                 const std::vector<json>& chunks) {
  std::string text = a.open();
  for (const json& c : chunks) {
    text += a.chunk(c, kT0);
    if (a.complete()) {
      break;
    }
  }
  text += a.close(kT0);
  return events(text);
}

std::vector<std::string> names(const std::vector<std::pair<std::string, json>>& evs) {
  std::vector<std::string> out;
  for (const auto& [name, data] : evs) {
    EXPECT_EQ(data["type"], name) << data.dump();
    out.push_back(name);
  }
  return out;
}

const std::vector<json> kTextChunks = {chunk({{"role", "assistant"}, {"content", "Hello"}}),
                                       chunk({{"content", " there"}}), final_chunk("stop", 12, 2)};

TEST(HttpAnthropicAnswer, StreamsAnthropicsEventSequence) {
  AnthropicAnswer a("user.chat", "msg_test", {}, true);
  EXPECT_EQ(a.content_type(), "text/event-stream");
  auto evs = stream(a, kTextChunks);
  EXPECT_EQ(names(evs),
            (std::vector<std::string>{"message_start", "ping", "content_block_start",
                                      "content_block_delta", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"}));
  ASSERT_EQ(evs.size(), 8u);
  EXPECT_EQ(evs[0].second, json::parse(R"({"type": "message_start", "message": {
      "id": "msg_test", "type": "message", "role": "assistant", "model": "user.chat",
      "content": [], "stop_reason": null, "stop_sequence": null,
      "usage": {"input_tokens": 0, "output_tokens": 0}}})"));
  EXPECT_EQ(evs[2].second, json::parse(R"({"type": "content_block_start", "index": 0,
      "content_block": {"type": "text", "text": ""}})"));
  EXPECT_EQ(evs[3].second, json::parse(R"({"type": "content_block_delta", "index": 0,
      "delta": {"type": "text_delta", "text": "Hello"}})"));
  EXPECT_EQ(evs[4].second["delta"]["text"], " there");
  EXPECT_EQ(evs[5].second, json::parse(R"({"type": "content_block_stop", "index": 0})"));
  EXPECT_EQ(evs[6].second, json::parse(R"({"type": "message_delta",
      "delta": {"stop_reason": "end_turn", "stop_sequence": null},
      "usage": {"input_tokens": 12, "output_tokens": 2}})"));
  EXPECT_EQ(evs[7].second, json::parse(R"({"type": "message_stop"})"));
}

TEST(HttpAnthropicAnswer, CollectsOneMessageWithoutStreaming) {
  AnthropicAnswer a("user.chat", "msg_test", {}, false);
  for (const json& c : kTextChunks) {
    EXPECT_EQ(a.chunk(c, kT0), "") << "nothing is written before the end";
  }
  auto whole = a.whole(kT0);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  EXPECT_EQ(*whole, json::parse(R"({
    "id": "msg_test", "type": "message", "role": "assistant", "model": "user.chat",
    "content": [{"type": "text", "text": "Hello there"}],
    "stop_reason": "end_turn", "stop_sequence": null,
    "usage": {"input_tokens": 12, "output_tokens": 2}})"));
}

TEST(HttpAnthropicAnswer, LengthBecomesMaxTokens) {
  AnthropicAnswer a("m", "msg_x", {}, false);
  a.chunk(chunk({{"content", "The"}}), kT0);
  a.chunk(final_chunk("length", 3, 1), kT0);
  auto whole = a.whole(kT0);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ((*whole)["stop_reason"], "max_tokens");
}

// llama-server's stream of one tool call: id and name first, then the
// arguments in pieces, then finish_reason "tool_calls".
const std::vector<json> kToolChunks = {
    chunk({{"role", "assistant"}, {"content", "Checking."}}),
    chunk({{"tool_calls",
            {{{"index", 0},
              {"id", "call_1"},
              {"type", "function"},
              {"function", {{"name", "get_weather"}, {"arguments", ""}}}}}}}),
    chunk({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "{\"city\":"}}}}}}}),
    chunk({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "\"Paris\"}"}}}}}}}),
    final_chunk("tool_calls", 20, 9)};

TEST(HttpAnthropicAnswer, StreamsToolCallsAsInputJsonDeltas) {
  AnthropicAnswer a("m", "msg_t", {}, true);
  auto evs = stream(a, kToolChunks);
  EXPECT_EQ(names(evs),
            (std::vector<std::string>{
                "message_start", "ping", "content_block_start", "content_block_delta",
                "content_block_stop", "content_block_start", "content_block_delta",
                "content_block_delta", "content_block_stop", "message_delta", "message_stop"}));
  ASSERT_EQ(evs.size(), 11u);
  EXPECT_EQ(evs[5].second, json::parse(R"({"type": "content_block_start", "index": 1,
      "content_block": {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {}}})"));
  EXPECT_EQ(evs[6].second, json::parse(R"({"type": "content_block_delta", "index": 1,
      "delta": {"type": "input_json_delta", "partial_json": "{\"city\":"}})"));
  EXPECT_EQ(evs[7].second["delta"]["partial_json"], "\"Paris\"}");
  EXPECT_EQ(evs[8].second["index"], 1);
  EXPECT_EQ(evs[9].second["delta"]["stop_reason"], "tool_use");
}

TEST(HttpAnthropicAnswer, CollectsToolCallsWithParsedInput) {
  AnthropicAnswer a("m", "msg_t", {}, false);
  for (const json& c : kToolChunks) {
    a.chunk(c, kT0);
  }
  auto whole = a.whole(kT0);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  EXPECT_EQ((*whole)["content"], json::parse(R"([
      {"type": "text", "text": "Checking."},
      {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}])"));
  EXPECT_EQ((*whole)["stop_reason"], "tool_use");
  EXPECT_EQ((*whole)["usage"], json({{"input_tokens", 20}, {"output_tokens", 9}}));
}

TEST(HttpAnthropicAnswer, ArgumentsThatAreNotJsonAreAnUpstreamError) {
  AnthropicAnswer a("m", "msg_t", {}, false);
  a.chunk(
      chunk({{"tool_calls",
              {{{"index", 0}, {"id", "c"}, {"function", {{"name", "f"}, {"arguments", "{x"}}}}}}}),
      kT0);
  auto whole = a.whole(kT0);
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.error().code(), ErrorCode::kUpstreamProtocol);
}

TEST(HttpAnthropicAnswer, ReasoningBecomesAThinkingBlock) {
  AnthropicAnswer a("m", "msg_r", {}, true);
  auto evs = stream(a, {chunk({{"reasoning_content", "Let me think."}}),
                        chunk({{"content", "Done."}}), final_chunk("stop", 4, 5)});
  ASSERT_EQ(evs.size(), 10u);
  EXPECT_EQ(evs[2].second["content_block"]["type"], "thinking");
  EXPECT_EQ(evs[3].second["delta"],
            json({{"type", "thinking_delta"}, {"thinking", "Let me think."}}));
  EXPECT_EQ(evs[4].second, json::parse(R"({"type": "content_block_stop", "index": 0})"));
  EXPECT_EQ(evs[5].second["content_block"], json({{"type", "text"}, {"text", ""}}));
  EXPECT_EQ(evs[5].second["index"], 1);
}

// A stop sequence split across chunks: the text before it is written, the
// part that might begin it is held back, and the answer completes there.
TEST(HttpAnthropicAnswer, StopSequenceSplitAcrossChunksEndsTheAnswer) {
  AnthropicAnswer a("m", "msg_s", {"END"}, true);
  std::string text = a.open();
  text += a.chunk(chunk({{"content", "one two E"}}), kT0);
  EXPECT_FALSE(a.complete());
  text += a.chunk(chunk({{"content", "N"}}), kT0);
  EXPECT_FALSE(a.complete());
  text += a.chunk(chunk({{"content", "D three"}}), kT0);
  EXPECT_TRUE(a.complete()) << "the backend's request can be cancelled now";
  EXPECT_EQ(a.chunk(chunk({{"content", " four"}}), kT0), "") << "nothing after the stop";
  text += a.close(kT0);
  std::string streamed;
  json delta;
  for (const auto& [name, data] : events(text)) {
    if (name == "content_block_delta") {
      streamed += data["delta"]["text"].get<std::string>();
    } else if (name == "message_delta") {
      delta = data["delta"];
    }
  }
  EXPECT_EQ(streamed, "one two ");
  EXPECT_EQ(delta, json({{"stop_reason", "stop_sequence"}, {"stop_sequence", "END"}}));
}

TEST(HttpAnthropicAnswer, HeldBackTextIsWrittenWhenItIsNoStop) {
  AnthropicAnswer a("m", "msg_s", {"STOP"}, false);
  a.chunk(chunk({{"content", "a ST"}}), kT0);
  a.chunk(chunk({{"content", "ory"}}), kT0);
  a.chunk(final_chunk("stop", 1, 2), kT0);
  auto whole = a.whole(kT0);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ((*whole)["content"], json::parse(R"([{"type": "text", "text": "a STory"}])"));
  EXPECT_EQ((*whole)["stop_reason"], "end_turn");
  EXPECT_EQ((*whole)["stop_sequence"], nullptr);
}

TEST(HttpAnthropicAnswer, KeepalivesArePings) {
  AnthropicAnswer a("m", "msg_k", {}, true);
  EXPECT_EQ(a.keepalive(), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
}

TEST(HttpAnthropicAnswer, NewIdsLookLikeAnthropics) {
  const std::string id = AnthropicAnswer::new_id();
  EXPECT_EQ(id.rfind("msg_", 0), 0u);
  EXPECT_EQ(id.size(), 28u);
  EXPECT_NE(id, AnthropicAnswer::new_id());
}

// ---- errors ------------------------------------------------------------------------

TEST(HttpAnthropicErrors, StatusesMapToAnthropicsErrorTypes) {
  EXPECT_STREQ(anthropic_error_type(400), "invalid_request_error");
  EXPECT_STREQ(anthropic_error_type(415), "invalid_request_error");
  EXPECT_STREQ(anthropic_error_type(401), "authentication_error");
  EXPECT_STREQ(anthropic_error_type(403), "permission_error");
  EXPECT_STREQ(anthropic_error_type(404), "not_found_error");
  EXPECT_STREQ(anthropic_error_type(413), "request_too_large");
  EXPECT_STREQ(anthropic_error_type(429), "rate_limit_error");
  EXPECT_STREQ(anthropic_error_type(500), "api_error");
  EXPECT_STREQ(anthropic_error_type(502), "api_error");
  EXPECT_STREQ(anthropic_error_type(503), "overloaded_error");
  EXPECT_STREQ(anthropic_error_type(504), "timeout_error");
}

TEST(HttpAnthropicErrors, ErrorsUseAnthropicsEnvelope) {
  DialectError e = dialect_error(ApiDialect::kAnthropic,
                                 Error(ErrorCode::kInvalidRequest, "'max_tokens' is required"));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(json::parse(e.body), json::parse(R"({"type": "error", "error": {
      "type": "invalid_request_error", "message": "'max_tokens' is required"}})"));
  EXPECT_EQ(dialect_stream_error(ApiDialect::kAnthropic, 500, "boom"),
            "event: error\ndata: "
            "{\"error\":{\"message\":\"boom\",\"type\":\"api_error\"},\"type\":\"error\"}\n\n");
}

}  // namespace
}  // namespace lemon::http
