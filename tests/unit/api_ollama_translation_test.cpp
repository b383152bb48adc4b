// The Ollama API translation (issue #14 §4): /api/chat, /api/generate and
// the embeddings requests as the backend's OpenAI bodies
// (ollama_request.h), the backend's chat completion chunks as Ollama's
// NDJSON lines and final statistics (ollama_answer.h), embeddings answers,
// model descriptions (ollama_models.h) and Ollama's error shape
// (api_dialect.h). The pairs are written as Ollama's docs/api.md shows its
// requests and answers, and as llama-server streams its chunks.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "lemon/api/ollama/ollama_answer.h"
#include "lemon/api/ollama/ollama_models.h"
#include "lemon/api/ollama/ollama_request.h"
#include "lemon/http/api_dialect.h"

namespace lemon::api {
namespace {

using http::ApiDialect;
using http::DialectError;
using inference::ChatAnswer;
using nlohmann::json;
using namespace std::chrono_literals;
using Clock = ChatAnswer::Clock;

const Clock::time_point kOllamaT0 = Clock::time_point(1000s);

// ---- requests ----------------------------------------------------------------------

TEST(HttpOllamaRequest, TranslatesARecordedChatRequest) {
  const json request = json::parse(R"({
    "model": "user.chat:latest",
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "What is the weather in Paris?", "images": ["iVBORw0KGgo="]},
      {"role": "assistant", "content": "", "thinking": "Need the tool.",
       "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "18 C", "tool_name": "get_weather"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
    "format": "json",
    "options": {"temperature": 0.2, "top_k": 40, "num_predict": 64, "stop": ["\n\n"],
                "seed": 7, "num_keep": 4, "repeat_penalty": 1.1},
    "think": false,
    "stream": false,
    "keep_alive": "5m"
  })");
  const json expected = json::parse(R"({
    "model": "user.chat",
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": [
        {"type": "text", "text": "What is the weather in Paris?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
      {"role": "assistant", "content": null, "reasoning_content": "Need the tool.",
       "tool_calls": [{"id": "call_2_0", "type": "function",
                       "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
      {"role": "tool", "content": "18 C", "tool_call_id": "call_2_0"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
    "response_format": {"type": "json_object"},
    "temperature": 0.2, "top_k": 40, "max_tokens": 64, "stop": ["\n\n"], "seed": 7,
    "n_keep": 4, "repeat_penalty": 1.1,
    "chat_template_kwargs": {"enable_thinking": false},
    "stream": true, "stream_options": {"include_usage": true}
  })");
  auto out = ollama_chat_request(request);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->openai, expected) << out->openai.dump(2);
  EXPECT_EQ(out->model, "user.chat");
  EXPECT_EQ(out->client_model, "user.chat:latest");
  EXPECT_FALSE(out->stream);
  EXPECT_FALSE(out->load_only);
  EXPECT_TRUE(out->has_images);
  ASSERT_TRUE(out->keep_alive.has_value());
  EXPECT_EQ(*out->keep_alive, 300000ms);
}

TEST(HttpOllamaRequest, TranslatesARecordedGenerateRequest) {
  const json request = json::parse(R"({
    "model": "user.chat", "system": "Be brief.", "prompt": "Why is the sky blue?",
    "format": {"type": "object", "properties": {"answer": {"type": "string"}}},
    "options": {"num_predict": -1, "stop": "END"}, "think": "high"
  })");
  const json expected = json::parse(R"({
    "model": "user.chat",
    "messages": [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": "Why is the sky blue?"}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "response",
      "schema": {"type": "object", "properties": {"answer": {"type": "string"}}}}},
    "stop": ["END"],
    "chat_template_kwargs": {"reasoning_effort": "high"},
    "stream": true, "stream_options": {"include_usage": true}
  })");
  auto out = ollama_generate_request(request);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->openai, expected) << out->openai.dump(2);
  EXPECT_TRUE(out->stream) << "Ollama streams unless told not to";
  EXPECT_FALSE(out->keep_alive.has_value());
}

TEST(HttpOllamaRequest, NoMessagesOrAnEmptyPromptOnlyLoadsOrUnloads) {
  auto chat = ollama_chat_request({{"model", "m"}, {"messages", json::array()}});
  ASSERT_TRUE(chat.ok());
  EXPECT_TRUE(chat->load_only);
  auto generate = ollama_generate_request({{"model", "m"}, {"keep_alive", 0}});
  ASSERT_TRUE(generate.ok());
  EXPECT_TRUE(generate->load_only);
  ASSERT_TRUE(generate->keep_alive.has_value());
  EXPECT_EQ(generate->keep_alive->count(), 0);
  auto forever = ollama_chat_request({{"model", "m"}, {"keep_alive", -1}});
  ASSERT_TRUE(forever.ok());
  ASSERT_TRUE(forever->keep_alive.has_value());
  EXPECT_LT(forever->keep_alive->count(), 0);
}

TEST(HttpOllamaRequest, ToolMessagesAnswerTheirCallsById) {
  const json request = json::parse(R"({"model": "m", "messages": [
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "a", "function": {"name": "f", "arguments": {}}},
      {"id": "b", "function": {"name": "g", "arguments": "{\"x\":1}"}}]},
    {"role": "tool", "content": "from g", "tool_name": "g"},
    {"role": "tool", "content": "from f", "tool_call_id": "a"}]})");
  auto out = ollama_chat_request(request);
  ASSERT_TRUE(out.ok()) << out.error().message();
  const json& m = out->openai["messages"];
  EXPECT_EQ(m[0]["tool_calls"][1]["function"]["arguments"], "{\"x\":1}");
  EXPECT_EQ(m[1]["tool_call_id"], "b");
  EXPECT_EQ(m[2]["tool_call_id"], "a");
}

// Each refusal names the field: a clear 400, never a silent ignore.
TEST(HttpOllamaRequest, RefusesWhatItCannotHonourNamingTheField) {
  struct Case {
    bool generate;
    json body;
    std::string param;
  };
  const json hi = {{{"role", "user"}, {"content", "hi"}}};
  const std::vector<Case> cases = {
      {false, {{"messages", hi}}, "model"},
      {false, {{"model", "m"}, {"messages", hi}, {"stream", "no"}}, "stream"},
      {false,
       {{"model", "m"}, {"messages", hi}, {"options", {{"num_ctx", 8192}}}},
       "options.num_ctx"},
      {false, {{"model", "m"}, {"messages", hi}, {"options", {{"num_gpu", 1}}}}, "options.num_gpu"},
      {false, {{"model", "m"}, {"messages", hi}, {"options", {{"bogus", 1}}}}, "options.bogus"},
      {false,
       {{"model", "m"}, {"messages", hi}, {"options", {{"num_predict", 0}}}},
       "options.num_predict"},
      {false,
       {{"model", "m"}, {"messages", hi}, {"options", {{"temperature", "hot"}}}},
       "options.temperature"},
      {false, {{"model", "m"}, {"messages", hi}, {"format", "xml"}}, "format"},
      {false, {{"model", "m"}, {"messages", hi}, {"think", "max"}}, "think"},
      {false, {{"model", "m"}, {"messages", hi}, {"keep_alive", "soon"}}, "keep_alive"},
      {false, {{"model", "m"}, {"messages", hi}, {"template", "x"}}, "template"},
      {false,
       {{"model", "m"}, {"messages", {{{"role", "robot"}, {"content", "x"}}}}},
       "messages[0].role"},
      {false,
       {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "x"}, {"extra", 1}}}}},
       "messages[0].extra"},
      {false,
       {{"model", "m"},
        {"messages", {{{"role", "assistant"}, {"content", "x"}, {"images", {"a"}}}}}},
       "messages[0].images"},
      {true, {{"model", "m"}, {"prompt", "x"}, {"raw", true}}, "raw"},
      {true, {{"model", "m"}, {"prompt", "x"}, {"context", {1, 2, 3}}}, "context"},
      {true, {{"model", "m"}, {"prompt", "x"}, {"suffix", "}"}}, "suffix"},
      {true, {{"model", "m"}, {"prompt", "x"}, {"template", "{{ .Prompt }}"}}, "template"},
      {true, {{"model", "m"}, {"prompt", 3}}, "prompt"},
  };
  for (const Case& c : cases) {
    auto out = c.generate ? ollama_generate_request(c.body) : ollama_chat_request(c.body);
    ASSERT_FALSE(out.ok()) << c.body.dump();
    EXPECT_EQ(out.error().code(), ErrorCode::kInvalidRequest) << c.body.dump();
    EXPECT_EQ(out.error().param(), c.param) << c.body.dump() << ": " << out.error().message();
  }
  auto num_ctx = ollama_chat_request(cases[2].body);
  EXPECT_NE(num_ctx.error().message().find("load"), std::string::npos)
      << "says why: " << num_ctx.error().message();
}

TEST(HttpOllamaRequest, EmbedAndTheOlderEmbeddings) {
  auto embed = ollama_embed_request({{"model", "e:latest"}, {"input", {"a", "b"}}}, false);
  ASSERT_TRUE(embed.ok()) << embed.error().message();
  EXPECT_EQ(embed->openai, json::parse(R"({"model": "e", "input": ["a", "b"],
                                            "encoding_format": "float"})"));
  EXPECT_FALSE(embed->stream);
  auto legacy = ollama_embed_request({{"model", "e"}, {"prompt", "a"}}, true);
  ASSERT_TRUE(legacy.ok()) << legacy.error().message();
  EXPECT_EQ(legacy->openai["input"], "a");
  EXPECT_TRUE(
      ollama_embed_request({{"model", "e"}, {"input", "a"}, {"truncate", false}}, false).ok());

  struct Case {
    bool legacy;
    json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {false, {{"model", "e"}, {"input", "a"}, {"truncate", true}}, "truncate"},
      {false, {{"model", "e"}, {"input", "a"}, {"dimensions", 4}}, "dimensions"},
      {false, {{"model", "e"}, {"input", json::array()}}, "input"},
      {false, {{"model", "e"}, {"input", {1, 2}}}, "input"},
      {false,
       {{"model", "e"}, {"input", "a"}, {"options", {{"temperature", 1}}}},
       "options.temperature"},
      {true, {{"model", "e"}, {"prompt", {"a"}}}, "prompt"},
      {true, {{"model", "e"}, {"input", "a"}}, "input"},
  };
  for (const Case& c : cases) {
    auto out = ollama_embed_request(c.body, c.legacy);
    ASSERT_FALSE(out.ok()) << c.body.dump();
    EXPECT_EQ(out.error().param(), c.param) << c.body.dump() << ": " << out.error().message();
  }
}

TEST(HttpOllamaRequest, ModelNames) {
  EXPECT_EQ(ollama_catalogue_name("Qwen3-0.6B-GGUF:latest"), "Qwen3-0.6B-GGUF");
  EXPECT_EQ(ollama_catalogue_name("user.a"), "user.a");
  EXPECT_EQ(ollama_catalogue_name(":latest"), ":latest");
  EXPECT_EQ(ollama_listed_name("user.a"), "user.a:latest");
  EXPECT_EQ(ollama_listed_name("extra.m:q4"), "extra.m:q4");
  EXPECT_EQ(*ollama_model_field({{"name", "a:latest"}}), "a");
  EXPECT_EQ(*ollama_model_field({{"model", "b"}, {"name", "a"}}), "b");
  EXPECT_EQ(ollama_model_field(json::object()).error().param(), "model");
}

// ---- answers -----------------------------------------------------------------------

json ollama_source_chunk(const json& delta, const json& finish = nullptr) {
  return {{"object", "chat.completion.chunk"},
          {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
}

// llama-server's last chunk: usage and timings (prompt 5 ms, generation 20 ms).
json final_chunk(const std::string& finish) {
  json c = ollama_source_chunk(json::object(), finish);
  c["usage"] = {{"prompt_tokens", 12}, {"completion_tokens", 2}, {"total_tokens", 14}};
  c["timings"] = {{"prompt_n", 12}, {"prompt_ms", 5.0}, {"predicted_n", 2}, {"predicted_ms", 20.0}};
  return c;
}

// NDJSON lines as objects; created_at is checked and removed.
std::vector<json> lines(const std::string& text) {
  static const std::regex kTimestamp(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z)");
  std::vector<json> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      ADD_FAILURE() << "a line without its newline: " << text.substr(start);
      break;
    }
    json j = json::parse(text.substr(start, nl - start));
    EXPECT_TRUE(std::regex_match(j.value("created_at", ""), kTimestamp)) << j.dump();
    j.erase("created_at");
    out.push_back(std::move(j));
    start = nl + 1;
  }
  return out;
}

// The final statistics for chunks at T0+100 ms and T0+150 ms, closed at T0+200 ms.
const json kFinal = json::parse(R"({"done": true, "done_reason": "stop",
  "total_duration": 200000000, "load_duration": 95000000,
  "prompt_eval_count": 12, "prompt_eval_duration": 5000000,
  "eval_count": 2, "eval_duration": 20000000})");

TEST(HttpOllamaAnswer, StreamsNdjsonLinesThenTheStatistics) {
  OllamaAnswer a(OllamaEndpoint::kChat, "user.chat:latest", true, kOllamaT0);
  EXPECT_EQ(a.content_type(), "application/x-ndjson");
  EXPECT_EQ(a.open(), "");
  std::string text = a.chunk(ollama_source_chunk({{"role", "assistant"}, {"content", "Hello"}}),
                             kOllamaT0 + 100ms);
  text += a.chunk(ollama_source_chunk({{"content", " there"}}), kOllamaT0 + 150ms);
  text += a.chunk(final_chunk("stop"), kOllamaT0 + 160ms);
  text += a.close(kOllamaT0 + 200ms);
  auto got = lines(text);
  ASSERT_EQ(got.size(), 3u) << text;
  EXPECT_EQ(got[0], json::parse(R"({"model": "user.chat:latest",
      "message": {"role": "assistant", "content": "Hello"}, "done": false})"));
  EXPECT_EQ(got[1]["message"]["content"], " there");
  json last = json::parse(R"({"model": "user.chat:latest",
      "message": {"role": "assistant", "content": ""}})");
  last.update(kFinal);
  EXPECT_EQ(got[2], last);
}

TEST(HttpOllamaAnswer, GenerateCollectsOneAnswer) {
  OllamaAnswer a(OllamaEndpoint::kGenerate, "m", false, kOllamaT0);
  EXPECT_EQ(a.chunk(ollama_source_chunk({{"content", "Hello"}}), kOllamaT0 + 100ms), "");
  EXPECT_EQ(a.chunk(ollama_source_chunk({{"content", " there"}}), kOllamaT0 + 150ms), "");
  a.chunk(final_chunk("length"), kOllamaT0 + 160ms);
  auto whole = a.whole(kOllamaT0 + 200ms);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  json got = *whole;
  got.erase("created_at");
  json expected = json::parse(R"({"model": "m", "response": "Hello there"})");
  expected.update(kFinal);
  expected["done_reason"] = "length";
  EXPECT_EQ(got, expected);
}

TEST(HttpOllamaAnswer, ThinkingGoesInItsOwnField) {
  OllamaAnswer chat(OllamaEndpoint::kChat, "m", true, kOllamaT0);
  auto got = lines(chat.chunk(ollama_source_chunk({{"reasoning_content", "Hmm"}}), kOllamaT0));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["message"], json({{"role", "assistant"}, {"content", ""}, {"thinking", "Hmm"}}));
  OllamaAnswer generate(OllamaEndpoint::kGenerate, "m", true, kOllamaT0);
  got = lines(generate.chunk(ollama_source_chunk({{"reasoning_content", "Hmm"}}), kOllamaT0));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["thinking"], "Hmm");
  EXPECT_EQ(got[0]["response"], "");
}

TEST(HttpOllamaAnswer, ToolCallsComeWholeWithObjectArguments) {
  const std::vector<json> chunks = {
      ollama_source_chunk({{"tool_calls",
                            {{{"index", 0},
                              {"id", "call_1"},
                              {"type", "function"},
                              {"function", {{"name", "get_weather"}, {"arguments", ""}}}}}}}),
      ollama_source_chunk(
          {{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "{\"city\":"}}}}}}}),
      ollama_source_chunk(
          {{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "\"Paris\"}"}}}}}}}),
      final_chunk("tool_calls")};
  const json calls = json::parse(R"([{"id": "call_1", "function": {"index": 0,
      "name": "get_weather", "arguments": {"city": "Paris"}}}])");
  OllamaAnswer streamed(OllamaEndpoint::kChat, "m", true, kOllamaT0);
  std::string text;
  for (const json& c : chunks) {
    text += streamed.chunk(c, kOllamaT0 + 100ms);
  }
  EXPECT_EQ(text, "") << "no line until the arguments are complete";
  auto got = lines(streamed.close(kOllamaT0 + 200ms));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["message"]["tool_calls"], calls);
  EXPECT_EQ(got[0]["done"], false);
  EXPECT_EQ(got[1]["done"], true);
  EXPECT_EQ(got[1]["done_reason"], "stop");

  OllamaAnswer whole(OllamaEndpoint::kChat, "m", false, kOllamaT0);
  for (const json& c : chunks) {
    whole.chunk(c, kOllamaT0 + 100ms);
  }
  auto answer = whole.whole(kOllamaT0 + 200ms);
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  EXPECT_EQ((*answer)["message"]["tool_calls"], calls);
}

TEST(HttpOllamaAnswer, EmbeddingsInInputOrder) {
  const json backend = json::parse(R"({"object": "list", "model": "e", "data": [
      {"object": "embedding", "index": 1, "embedding": [0.3, 0.4]},
      {"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
      "usage": {"prompt_tokens": 4, "total_tokens": 4}})");
  auto embed = ollama_embed_answer(backend, "e:latest", false, 1234);
  ASSERT_TRUE(embed.ok());
  EXPECT_EQ(*embed, json::parse(R"({"model": "e:latest", "embeddings": [[0.1, 0.2], [0.3, 0.4]],
                                    "total_duration": 1234, "prompt_eval_count": 4})"));
  auto legacy = ollama_embed_answer(backend, "e", true, 1);
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(*legacy, json::parse(R"({"embedding": [0.1, 0.2]})"));
  auto empty = ollama_embed_answer(json::parse(R"({"data": []})"), "e", false, 1);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code(), ErrorCode::kUpstreamProtocol);
}

TEST(HttpOllamaAnswer, TimestampsAreRfc3339WithNanoseconds) {
  const auto t = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(1714566896s + 123456789ns));
  EXPECT_EQ(ollama_timestamp(t), "2024-05-01T12:34:56.123456789Z");
}

// ---- models and errors -------------------------------------------------------------

ModelInfo qwen() {
  ModelInfo info;
  info.name = "Qwen3-0.6B-GGUF";
  info.recipe = "llamacpp";
  info.checkpoints["main"] = "unsloth/Qwen3-0.6B-GGUF:Q4_0";
  info.labels = {"reasoning", "tool-calling"};
  info.size_gb = 0.4;
  return info;
}

TEST(HttpOllamaModels, TagsEntryAndShow) {
  const json entry = ollama_model_entry(qwen());
  EXPECT_EQ(entry["name"], "Qwen3-0.6B-GGUF:latest");
  EXPECT_EQ(entry["model"], "Qwen3-0.6B-GGUF:latest");
  EXPECT_EQ(entry["size"], 400000000);
  EXPECT_TRUE(std::regex_match(entry["digest"].get<std::string>(), std::regex("[0-9a-f]{64}")));
  EXPECT_EQ(entry["details"], json::parse(R"({"parent_model": "", "format": "gguf",
      "family": "llamacpp", "families": ["llamacpp"], "parameter_size": "0.6B",
      "quantization_level": "Q4_0"})"));
  const json show = ollama_show(qwen(), 8192);
  EXPECT_EQ(show["capabilities"], json({"completion", "tools", "thinking"}));
  EXPECT_EQ(show["parameters"], "num_ctx 8192") << "Lemonade 11 and Ollama show the context";
  ModelInfo vision = qwen();
  vision.checkpoints["mmproj"] = "unsloth/Qwen3-0.6B-GGUF:mmproj.gguf";
  EXPECT_TRUE(model_has_vision(vision));
  EXPECT_FALSE(model_has_vision(qwen()));
  const json ps = ollama_running_entry(qwen(), 4096, std::nullopt);
  EXPECT_EQ(ps["context_length"], 4096);
  EXPECT_FALSE(ps.contains("modified_at"));
  EXPECT_TRUE(ps.contains("expires_at"));
}

TEST(HttpOllamaErrors, ErrorsUseOllamasShape) {
  DialectError e = dialect_error(ApiDialect::kOllama,
                                 Error(ErrorCode::kInvalidRequest, "'model' is required", "model"));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(json::parse(e.body), json({{"error", "'model' is required"}}));
  EXPECT_EQ(dialect_stream_error(ApiDialect::kOllama, 500, "boom"), "{\"error\":\"boom\"}\n");
}

}  // namespace
}  // namespace lemon::api
