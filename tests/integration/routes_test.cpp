// Every inference route through the real router and the fake backends, over
// plain HTTP (issue #3): completions, responses, embeddings, reranking and
// rerank, audio/transcriptions, images/generations, plus system-info, /live
// during a load, the model-type check on every route, max_completion_tokens,
// and the Responses API on a recipe without it.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Standard base64 (with padding) to bytes; nullopt if `text` is not base64.
std::optional<std::string> base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0 || (v[k] = value(c)) < 0) {
        return std::nullopt;
      }
    }
    std::uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2)
      out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1)
      out += static_cast<char>(n & 0xff);
  }
  return out;
}

std::uint32_t big_endian32(const std::string& s, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

class RoutesTest : public RouterTest {
 protected:
  std::vector<SseEvent> read_stream(const std::string& path, const nlohmann::json& body) {
    SseStream s(port(), path, body.dump());
    EXPECT_TRUE(s.read_head());
    EXPECT_EQ(s.status(), 200);
    EXPECT_NE(s.header("content-type").find("text/event-stream"), std::string::npos);
    auto events = s.rest();
    EXPECT_TRUE(s.ended_cleanly()) << path;
    return events;
  }
};

FormPart audio_file(const std::string& wav) {
  return form_file("file", wav, "speech.wav", "audio/wav");
}

// ---- completions ----------------------------------------------------------

TEST_F(RoutesTest, CompletionsNonStreaming) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r =
      http_post(port(), "/api/v1/completions",
                nlohmann::json{{"model", "user.a"}, {"prompt", "Once"}, {"max_tokens", 4}});
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  EXPECT_NE(r.header("Content-Type").find("application/json"), std::string::npos);
  auto j = r.json();
  EXPECT_EQ(j["object"], "text_completion") << r.body;
  EXPECT_EQ(j["choices"][0]["text"], "The quick brown fox") << r.body;
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length") << r.body;
  EXPECT_EQ(j["usage"]["completion_tokens"], 4) << r.body;

  // An array prompt is accepted too.
  r = http_post(
      port(), "/v1/completions",
      nlohmann::json{{"model", "user.a"}, {"prompt", {"Once", "upon"}}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(RoutesTest, CompletionsStreaming) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto events =
      read_stream("/api/v1/completions",
                  {{"model", "user.a"}, {"prompt", "Once"}, {"max_tokens", 3}, {"stream", true}});
  ASSERT_EQ(events.size(), 5u) << "3 tokens, the final chunk and [DONE]";
  std::string text;
  for (int i = 0; i < 3; ++i) {
    auto chunk = nlohmann::json::parse(events[i].data, nullptr, false);
    ASSERT_TRUE(chunk.is_object()) << events[i].data;
    EXPECT_EQ(chunk["object"], "text_completion") << events[i].data;
    text += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "The quick brown");
  EXPECT_EQ(nlohmann::json::parse(events[3].data)["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(events[4].is_done());
}

// ---- responses ------------------------------------------------------------

TEST_F(RoutesTest, ResponsesNonStreaming) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = http_post(
      port(), "/api/v1/responses",
      nlohmann::json{{"model", "user.a"}, {"input", "Hello there"}, {"max_output_tokens", 3}});
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  auto j = r.json();
  EXPECT_EQ(j["object"], "response") << r.body;
  EXPECT_EQ(j["status"], "completed") << r.body;
  EXPECT_EQ(j["output"][0]["type"], "message") << r.body;
  EXPECT_EQ(j["output"][0]["content"][0]["text"], "The quick brown") << r.body;
  EXPECT_EQ(j["usage"]["output_tokens"], 3) << r.body;

  expect_error(http_post(port(), "/api/v1/responses", nlohmann::json{{"model", "user.a"}}), 400,
               "invalid_request_error", "input", "no input");
  expect_error(http_post(port(), "/api/v1/responses",
                         nlohmann::json{{"model", "user.a"}, {"input", nlohmann::json::array()}}),
               400, "invalid_request_error", "input", "empty input");
}

TEST_F(RoutesTest, ResponsesStreamingPassesEventsThroughWithoutDone) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto events = read_stream(
      "/api/v1/responses",
      {{"model", "user.a"}, {"input", "Hello there"}, {"max_output_tokens", 4}, {"stream", true}});
  std::vector<std::string> types;
  for (const auto& ev : events) {
    EXPECT_FALSE(ev.is_done()) << "the Responses API has no [DONE]";
    EXPECT_NE(ev.data.find("[DONE]"), 0u);
    auto j = nlohmann::json::parse(ev.data, nullptr, false);
    ASSERT_TRUE(j.is_object()) << ev.data;
    EXPECT_EQ(ev.event, j["type"]) << "the event: line passes through";
    types.push_back(j["type"]);
  }
  const std::vector<std::string> expected = {
      "response.created",           "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.delta", "response.output_text.done",  "response.content_part.done",
      "response.output_item.done",  "response.completed"};
  EXPECT_EQ(types, expected);
  ASSERT_FALSE(events.empty());
  auto last = nlohmann::json::parse(events.back().data, nullptr, false);
  EXPECT_EQ(last["response"]["usage"]["output_tokens"], 4) << events.back().data;
}

// ---- embeddings -----------------------------------------------------------

TEST_F(RoutesTest, EmbeddingsFloatAndBase64) {
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply f = http_post(port(), "/api/v1/embeddings",
                          nlohmann::json{{"model", "user.e"}, {"input", "hello"}});
  ASSERT_EQ(f.status, 200) << f.error << f.body;
  auto fj = f.json();
  EXPECT_EQ(fj["object"], "list") << f.body;
  ASSERT_EQ(fj["data"].size(), 1u) << f.body;
  const auto& vec = fj["data"][0]["embedding"];
  ASSERT_TRUE(vec.is_array()) << f.body;
  ASSERT_GT(vec.size(), 0u);
  for (const auto& x : vec) {
    ASSERT_TRUE(x.is_number()) << f.body;
  }

  HttpReply b = http_post(
      port(), "/api/v1/embeddings",
      nlohmann::json{{"model", "user.e"}, {"input", "hello"}, {"encoding_format", "base64"}});
  ASSERT_EQ(b.status, 200) << b.error << b.body;
  auto bj = b.json();
  ASSERT_EQ(bj["data"].size(), 1u) << b.body;
  ASSERT_TRUE(bj["data"][0]["embedding"].is_string()) << b.body;
  auto bytes = base64_decode(bj["data"][0]["embedding"].get<std::string>());
  ASSERT_TRUE(bytes.has_value()) << b.body;
  ASSERT_EQ(bytes->size(), 4 * vec.size()) << "little-endian float32 per dimension";
  for (std::size_t i = 0; i < vec.size(); ++i) {
    float x;
    std::memcpy(&x, bytes->data() + 4 * i, 4);
    EXPECT_FLOAT_EQ(x, vec[i].get<float>()) << "dimension " << i;
  }
}

TEST_F(RoutesTest, EmbeddingsOfAStringAndOfAnArray) {
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r =
      http_post(port(), "/v1/embeddings",
                nlohmann::json{{"model", "user.e"}, {"input", {"hello", "world", "again"}}});
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  auto j = r.json();
  ASSERT_EQ(j["data"].size(), 3u) << r.body;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["data"][i]["index"], i) << r.body;
    EXPECT_EQ(j["data"][i]["object"], "embedding") << r.body;
  }
  HttpReply one =
      http_post(port(), "/v1/embeddings", nlohmann::json{{"model", "user.e"}, {"input", "world"}});
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json()["data"][0]["embedding"], j["data"][1]["embedding"])
      << "the same text embeds the same alone or in an array";
}

TEST_F(RoutesTest, EmbeddingsRejectABadInputOrEncodingFormat) {
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const auto& input : {nlohmann::json(42), nlohmann::json{{"text", "hi"}},
                            nlohmann::json::array(), nlohmann::json(nullptr)}) {
    expect_error(http_post(port(), "/api/v1/embeddings",
                           nlohmann::json{{"model", "user.e"}, {"input", input}}),
                 400, "invalid_request_error", "input", "input " + input.dump());
  }
  expect_error(
      http_post(port(), "/api/v1/embeddings",
                nlohmann::json{{"model", "user.e"}, {"input", "hi"}, {"encoding_format", "x"}}),
      400, "invalid_request_error", "encoding_format", "encoding_format x");
  expect_nothing_loaded();
}

// ---- reranking / rerank ---------------------------------------------------

TEST_F(RoutesTest, RerankingAndRerankBehaveTheSame) {
  env_.add_reranker("r");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const nlohmann::json body = {{"model", "user.r"},
                               {"query", "a cat"},
                               {"documents", {"stocks fell", "a cat sat", "dogs bark", "cat"}}};
  std::vector<nlohmann::json> answers;
  for (const char* path : {"/api/v1/reranking", "/api/v1/rerank", "/v1/rerank"}) {
    HttpReply r = http_post(port(), path, body);
    ASSERT_EQ(r.status, 200) << path << ": " << r.error << r.body;
    auto j = r.json();
    ASSERT_TRUE(j["results"].is_array()) << path << ": " << r.body;
    EXPECT_EQ(j["results"].size(), 4u) << path << ": " << r.body;
    std::vector<int> seen;
    for (const auto& res : j["results"]) {
      ASSERT_TRUE(res["index"].is_number_integer()) << r.body;
      ASSERT_TRUE(res["relevance_score"].is_number()) << r.body;
      seen.push_back(res["index"]);
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3})) << path << ": every document is scored once";
    answers.push_back(j["results"]);
  }
  EXPECT_EQ(answers[0], answers[1]) << "reranking and rerank answer alike";
  EXPECT_EQ(router().count_log("starting user.r:"), 1);
}

TEST_F(RoutesTest, RerankingRejectsAMissingQueryOrBadDocuments) {
  env_.add_reranker("r");
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const char* path : {"/api/v1/reranking", "/api/v1/rerank"}) {
    expect_error(
        http_post(port(), path, nlohmann::json{{"model", "user.r"}, {"documents", {"a", "b"}}}),
        400, "invalid_request_error", "query", std::string(path) + " no query");
    expect_error(http_post(port(), path,
                           nlohmann::json{{"model", "user.r"}, {"query", 3}, {"documents", {"a"}}}),
                 400, "invalid_request_error", "query", std::string(path) + " numeric query");
    expect_error(
        http_post(port(), path,
                  nlohmann::json{{"model", "user.r"}, {"query", "q"}, {"documents", "a, b"}}),
        400, "invalid_request_error", "documents", std::string(path) + " string documents");
    expect_error(http_post(port(), path, nlohmann::json{{"model", "user.r"}, {"query", "q"}}), 400,
                 "invalid_request_error", "documents", std::string(path) + " no documents");
  }
  expect_nothing_loaded();
}

// ---- images/generations ---------------------------------------------------

TEST_F(RoutesTest, ImageGenerationReturnsPngs) {
  env_.add_image("i");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r =
      http_post(port(), "/api/v1/images/generations",
                nlohmann::json{{"model", "user.i"}, {"prompt", "a lemon"}, {"size", "256x192"}});
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  auto j = r.json();
  ASSERT_EQ(j["data"].size(), 1u) << r.body;
  auto png = base64_decode(j["data"][0]["b64_json"].get<std::string>());
  ASSERT_TRUE(png.has_value());
  ASSERT_GE(png->size(), 24u);
  EXPECT_EQ(png->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png->substr(12, 4), "IHDR");
  // The fake draws (W/64)x(H/64) pixels: the size reached the backend.
  EXPECT_EQ(big_endian32(*png, 16), 4u);
  EXPECT_EQ(big_endian32(*png, 20), 3u);

  HttpReply two =
      http_post(port(), "/api/v1/images/generations",
                nlohmann::json{{"model", "user.i"}, {"prompt", "a lemon"}, {"n", 2}, {"seed", 7}});
  ASSERT_EQ(two.status, 200) << two.error << two.body;
  auto tj = two.json();
  ASSERT_EQ(tj["data"].size(), 2u) << two.body;
  for (const auto& d : tj["data"]) {
    auto bytes = base64_decode(d["b64_json"].get<std::string>());
    ASSERT_TRUE(bytes.has_value());
    EXPECT_EQ(bytes->substr(0, 4), std::string("\x89PNG", 4));
  }
}

TEST_F(RoutesTest, ImageGenerationRejectsBadRequests) {
  env_.add_image("i");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string path = "/api/v1/images/generations";
  expect_error(http_post(port(), path, nlohmann::json{{"model", "user.i"}}), 400,
               "invalid_request_error", "prompt", "no prompt");
  expect_error(
      http_post(port(), path, nlohmann::json{{"model", "user.i"}, {"prompt", "x"}, {"n", 9}}), 400,
      "invalid_request_error", "n", "n 9: sd-server returns at most 8");
  expect_error(
      http_post(port(), path,
                nlohmann::json{{"model", "user.i"}, {"prompt", "x"}, {"size", "4096x512"}}),
      400, "invalid_request_error", "size", "a side over 2048");
  expect_error(http_post(port(), path,
                         nlohmann::json{{"model", "user.i"},
                                        {"prompt",
                                         "x <sd_cpp_extra_args>{\"batch_count\":64}"
                                         "</sd_cpp_extra_args>"}}),
               400, "invalid_request_error", "prompt", "a prompt with sd-server's arguments");
  expect_error(
      http_post(port(), path, nlohmann::json{{"model", "user.i"}, {"prompt", "x"}, {"steps", 101}}),
      400, "invalid_request_error", "steps", "steps over sd-server's 100");
  expect_error(
      http_post(port(), path, nlohmann::json{{"model", "user.i"}, {"prompt", "x"}, {"n", 0}}), 400,
      "invalid_request_error", "n", "n 0");
  expect_error(http_post(port(), path,
                         nlohmann::json{{"model", "user.i"}, {"prompt", "x"}, {"size", "big"}}),
               400, "invalid_request_error", "size", "size big");
  expect_error(
      http_post(port(), path,
                nlohmann::json{{"model", "user.i"}, {"prompt", "x"}, {"response_format", "url"}}),
      400, "invalid_request_error", "response_format", "response_format url");
  expect_nothing_loaded();
}

// ---- system-info ----------------------------------------------------------

TEST_F(RoutesTest, SystemInfoDescribesTheMachineAndTheBackends) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = http_get(port(), "/api/v1/system-info");
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  auto j = r.json();
  for (const char* key : {"OS Version", "Processor", "Physical Memory", "devices", "recipes"}) {
    EXPECT_TRUE(j.contains(key)) << key << " missing: " << r.body;
  }
  EXPECT_TRUE(j["OS Version"].is_string());
  EXPECT_TRUE(j["devices"].is_object());
  const auto& cpu = j["recipes"]["llamacpp"]["backends"]["cpu"];
  EXPECT_EQ(cpu["state"], "installed") << cpu.dump();
  EXPECT_EQ(cpu["binary"], fake_bin("llama-server")) << cpu.dump();
  EXPECT_EQ(cpu["binary_env"], "LEMONADE_LLAMACPP_CPU_BIN") << cpu.dump();
  EXPECT_EQ(j["recipes"]["whispercpp"]["backends"]["cpu"]["binary_env"],
            "LEMONADE_WHISPERCPP_CPU_BIN");
  EXPECT_EQ(j["recipes"]["whispercpp"]["backends"]["cpu"]["state"], "installed");
  EXPECT_EQ(j["recipes"]["sd-cpp"]["backends"]["cpu"]["binary_env"], "LEMONADE_SDCPP_CPU_BIN");
  EXPECT_EQ(j["recipes"]["sd-cpp"]["backends"]["cpu"]["state"], "installed");
  EXPECT_EQ(j["recipes"]["flm"]["backends"]["npu"]["binary_env"], "LEMONADE_FLM_BIN");
  EXPECT_EQ(j["recipes"]["ryzenai-llm"]["backends"]["npu"]["binary_env"],
            "LEMONADE_RYZENAILLM_NPU_BIN");
  for (const auto& [recipe, entry] : j["recipes"].items()) {
    for (const auto& [backend, b] : entry["backends"].items()) {
      EXPECT_TRUE(b["state"] == "installed" || b["state"] == "installable" ||
                  b["state"] == "update_required" || b["state"] == "unsupported")
          << recipe << "/" << backend << ": " << b.dump();
    }
  }
}

TEST_F(RoutesTest, SystemInfoSaysInstallableWhenTheBinaryIsMissing) {
  const std::string missing = env_.root() + "/no-such-llama-server";
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_LLAMACPP_CPU_BIN", missing}}));
  auto j = http_get(port(), "/api/v1/system-info").json();
  const auto& cpu = j["recipes"]["llamacpp"]["backends"]["cpu"];
  EXPECT_EQ(cpu["state"], "installable") << cpu.dump();
  EXPECT_EQ(cpu["action"], "lemonade-server recipes --install llamacpp:cpu") << cpu.dump();
  EXPECT_EQ(cpu["version"], "b8175") << cpu.dump();  // resources/backend_versions.json's pin
  EXPECT_NE(cpu.value("message", "").find("LEMONADE_LLAMACPP_CPU_BIN"), std::string::npos)
      << cpu.dump();
}

// ---- /live during a load --------------------------------------------------

TEST_F(RoutesTest, LiveAnswersWhileALoadIsInProgress) {
  // A backend that never becomes ready: the load is in progress for as long
  // as the test looks.
  const std::string x = env_.add_llm("x");
  env_.write_sidecar(x, {{"hang_at_start", true}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto loading = std::async(std::launch::async, [&] { return load(port(), "user.x"); });
  ASSERT_TRUE(router().wait_for_log("starting user.x"));
  for (const char* path : {"/live", "/api/v1/live"}) {
    HttpReply r = http_get(port(), path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.error << r.body;
    EXPECT_EQ(r.json(), (nlohmann::json{{"status", "ok"}})) << path << ": " << r.body;
  }
  EXPECT_EQ(loading.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout)
      << "the load ended though its backend never became ready";
  // A shutdown (its drain skipped by a second signal) stops the load, and
  // the waiting client is told so.
  router().signal(SIGTERM);
  ASSERT_TRUE(router().wait_for_log("draining"));
  router().signal(SIGTERM);
  ASSERT_EQ(loading.wait_for(kWait), std::future_status::ready);
  HttpReply stopped = loading.get();
  EXPECT_EQ(stopped.status, 503) << stopped.body;
  EXPECT_EQ(stopped.json()["error"]["code"], "backend_unavailable") << stopped.body;
}

// ---- model type ------------------------------------------------------------

TEST_F(RoutesTest, AModelOfTheWrongTypeIs400OnEveryRouteBeforeAnythingLoads) {
  env_.add_every_type();
  ASSERT_NO_FATAL_FAILURE(start_router());
  struct Case {
    const char* path;
    nlohmann::json body;
  };
  const std::vector<Case> cases = {
      {"/api/v1/chat/completions", chat_body("user.e")},
      {"/api/v1/chat/completions", chat_body("user.i", {{"stream", true}})},
      {"/api/v1/completions", {{"model", "user.r"}, {"prompt", "x"}}},
      {"/api/v1/responses", {{"model", "user.w"}, {"input", "x"}}},
      {"/api/v1/embeddings", {{"model", "user.a"}, {"input", "x"}}},
      {"/api/v1/embeddings", {{"model", "user.r"}, {"input", "x"}}},
      {"/api/v1/reranking", {{"model", "user.e"}, {"query", "q"}, {"documents", {"d"}}}},
      {"/api/v1/rerank", {{"model", "user.a"}, {"query", "q"}, {"documents", {"d"}}}},
      {"/api/v1/images/generations", {{"model", "user.a"}, {"prompt", "x"}}},
  };
  for (const auto& c : cases) {
    expect_error(http_post(port(), c.path, c.body), 400, "unsupported_operation", "model",
                 std::string(c.path) + " " + c.body["model"].get<std::string>());
  }
  for (const char* model : {"user.a", "user.i"}) {
    expect_error(transcribe({audio_file(wav_bytes(160)), form_field("model", model)}), 400,
                 "unsupported_operation", "model", std::string("transcription ") + model);
  }
  expect_nothing_loaded();
}

// ---- max_completion_tokens --------------------------------------------------

TEST_F(RoutesTest, MaxCompletionTokensIsHonoured) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = chat(port(), "user.a", {{"max_completion_tokens", 5}});
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  auto j = r.json();
  EXPECT_EQ(j["usage"]["completion_tokens"], 5) << r.body;
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length") << r.body;
  EXPECT_EQ(j["choices"][0]["message"]["content"], "The quick brown fox jumps") << r.body;

  auto events = read_stream("/api/v1/chat/completions",
                            chat_body("user.a", {{"max_completion_tokens", 6},
                                                 {"stream", true},
                                                 {"stream_options", {{"include_usage", true}}}}));
  int token_chunks = 0;
  nlohmann::json final_chunk;
  for (const auto& ev : events) {
    if (ev.is_done()) {
      continue;
    }
    auto c = nlohmann::json::parse(ev.data, nullptr, false);
    ASSERT_TRUE(c.is_object()) << ev.data;
    const auto& delta = c["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string() &&
        !delta["content"].get<std::string>().empty()) {
      ++token_chunks;
    }
    if (!c["choices"][0]["finish_reason"].is_null()) {
      final_chunk = c;
    }
  }
  EXPECT_EQ(token_chunks, 6);
  EXPECT_EQ(final_chunk["choices"][0]["finish_reason"], "length") << final_chunk.dump();
  EXPECT_EQ(final_chunk["usage"]["completion_tokens"], 6) << final_chunk.dump();
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().is_done());
}

// ---- recipe without the Responses API ---------------------------------------

TEST_F(RoutesTest, ResponsesOnAnFlmModelIsUnsupported) {
  env_.add_flm("f", "llama3.2:1b");
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMON_FAKE_FLM_INSTALLED", "llama3.2:1b"}}));
  HttpReply r =
      http_post(port(), "/api/v1/responses", nlohmann::json{{"model", "user.f"}, {"input", "hi"}});
  expect_error(r, 400, "unsupported_operation", "", "responses on flm");
  EXPECT_NE(r.json()["error"].value("message", "").find("flm"), std::string::npos) << r.body;
  // Chat on the same model works: the refusal is about the route.
  HttpReply c = chat(port(), "user.f", {{"max_tokens", 2}});
  EXPECT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.json()["usage"]["completion_tokens"], 2) << c.body;
}

}  // namespace
}  // namespace lemon::testing
