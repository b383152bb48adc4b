// The Ollama API (issue #14 §4, docs/api.md "Ollama API") against the real
// router and the fake llama-server: /api/chat and /api/generate with NDJSON
// streaming and without, load and unload through keep_alive, the model
// routes (/api/tags, /api/show, /api/ps, /api/pull, /api/delete), the
// embeddings (/api/embed, /api/embeddings), /api/version, Ollama's error
// shape {"error":"..."}, the API key, and --ollama-port's second listener.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <regex>

#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

json chat_request(const std::string& model, const json& extra = json::object()) {
  json body = {{"model", model},
               {"messages", {{{"role", "user"}, {"content", "Say something"}}}},
               {"options", {{"num_predict", 4}}}};
  body.update(extra);
  return body;
}

// {"error":"..."} and nothing else.
void expect_ollama_error(const HttpReply& r, int status, const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.error << r.body;
  json j = r.json();
  ASSERT_TRUE(j.is_object()) << what << ": " << r.body;
  EXPECT_EQ(j.size(), 1u) << what << ": " << r.body;
  EXPECT_TRUE(j["error"].is_string()) << what << ": " << r.body;
}

// The lines of an NDJSON body, parsed.
std::vector<json> ndjson(const std::string& body) {
  std::vector<json> out;
  std::size_t start = 0;
  while (start < body.size()) {
    std::size_t nl = body.find('\n', start);
    EXPECT_NE(nl, std::string::npos) << "the last line has no newline: " << body;
    if (nl == std::string::npos) {
      nl = body.size();
    }
    out.push_back(json::parse(body.substr(start, nl - start), nullptr, false));
    EXPECT_TRUE(out.back().is_object()) << body.substr(start, nl - start);
    start = nl + 1;
  }
  return out;
}

class OllamaApiTest : public RouterTest {
 protected:
  // A streamed answer's lines; fails unless it is a 200 NDJSON stream that
  // ends cleanly.
  std::vector<json> stream(const std::string& path, const json& body, int on_port = 0) {
    SseStream s(on_port != 0 ? on_port : port(), path, body.dump());
    EXPECT_TRUE(s.read_head());
    EXPECT_EQ(s.status(), 200);
    EXPECT_NE(s.header("content-type").find("application/x-ndjson"), std::string::npos);
    std::string text = s.read_body();
    EXPECT_TRUE(s.ended_cleanly());
    return ndjson(text);
  }

  std::vector<std::string> listed(const std::string& path) {
    HttpReply r = http_get(port(), path);
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<std::string> names;
    const json models = r.json()["models"];  // a copy: r.json() is a temporary
    for (const auto& m : models) {
      names.push_back(m["name"].get<std::string>());
    }
    return names;
  }
};

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

void expect_final_statistics(const json& line, const std::string& reason, int eval_count) {
  EXPECT_EQ(line["done"], true) << line.dump();
  EXPECT_EQ(line["done_reason"], reason) << line.dump();
  EXPECT_EQ(line["eval_count"], eval_count) << line.dump();
  EXPECT_GT(line["prompt_eval_count"].get<int>(), 0) << line.dump();
  for (const char* key :
       {"total_duration", "load_duration", "prompt_eval_duration", "eval_duration"}) {
    ASSERT_TRUE(line[key].is_number_integer()) << key << ": " << line.dump();
    EXPECT_GE(line[key].get<std::int64_t>(), 0) << key;
  }
  // The fake reports 10 ms per token: durations are in nanoseconds.
  EXPECT_EQ(line["eval_duration"].get<std::int64_t>(), eval_count * 10'000'000LL) << line.dump();
  EXPECT_GT(line["total_duration"].get<std::int64_t>(), 0) << line.dump();
  static const std::regex kTimestamp(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z)");
  EXPECT_TRUE(std::regex_match(line.value("created_at", ""), kTimestamp)) << line.dump();
}

TEST_F(OllamaApiTest, ChatWithoutStreaming) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = http_post(port(), "/api/chat", chat_request("user.a:latest", {{"stream", false}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["model"], "user.a:latest");
  EXPECT_EQ(j["message"], json({{"role", "assistant"}, {"content", "The quick brown fox"}}));
  expect_final_statistics(j, "length", 4);
}

TEST_F(OllamaApiTest, ChatStreamsNdjsonByDefault) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto lines = stream("/api/chat", chat_request("user.a"));
  ASSERT_EQ(lines.size(), 5u) << "4 tokens and the final line";
  std::string text;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(lines[i]["done"], false);
    EXPECT_EQ(lines[i]["model"], "user.a");
    EXPECT_EQ(lines[i]["message"]["role"], "assistant");
    text += lines[i]["message"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, "The quick brown fox");
  EXPECT_EQ(lines[4]["message"]["content"], "");
  expect_final_statistics(lines[4], "length", 4);
}

TEST_F(OllamaApiTest, GenerateWithAndWithoutStreaming) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const json body = {{"model", "user.a"},
                     {"system", "Be brief."},
                     {"prompt", "Why is the sky blue?"},
                     {"options", {{"num_predict", 3}, {"temperature", 0.1}}}};
  json whole = body;
  whole["stream"] = false;
  HttpReply r = http_post(port(), "/api/generate", whole);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["response"], "The quick brown");
  EXPECT_FALSE(r.json().contains("message"));
  expect_final_statistics(r.json(), "length", 3);
  auto lines = stream("/api/generate", body);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["response"], "The");
  expect_final_statistics(lines[3], "length", 3);
  // The backend got a chat with the system prompt, the prompt and the options.
  auto url = loaded_field(health(port()), "user.a", "backend_url");
  ASSERT_TRUE(url.is_string());
  json sent = fake_state(url.get<std::string>())["last_request"];
  EXPECT_EQ(sent["messages"], json::parse(R"([{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Why is the sky blue?"}])"));
  EXPECT_EQ(sent["temperature"], 0.1);
  EXPECT_EQ(sent["max_tokens"], 3);
}

TEST_F(OllamaApiTest, ToolsReachTheBackend) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  // Ollama has no tool_choice and the fake calls a tool only when forced, so
  // this checks that the tools reach the backend (the calls' translation is
  // unit-tested).
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  HttpReply r =
      http_post(port(), "/api/chat", chat_request("user.a", {{"stream", false}, {"tools", tools}}));
  ASSERT_EQ(r.status, 200) << r.body;
  auto url = loaded_field(health(port()), "user.a", "backend_url");
  ASSERT_TRUE(url.is_string());
  EXPECT_EQ(fake_state(url.get<std::string>())["last_request"]["tools"], tools);
}

TEST_F(OllamaApiTest, KeepAliveLoadsAndUnloads) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_TRUE(listed("/api/ps").empty());
  HttpReply load =
      http_post(port(), "/api/chat",
                json{{"model", "user.a"}, {"messages", json::array()}, {"stream", false}});
  ASSERT_EQ(load.status, 200) << load.body;
  EXPECT_EQ(load.json()["done"], true);
  EXPECT_EQ(load.json()["done_reason"], "load");
  EXPECT_EQ(listed("/api/ps"), std::vector<std::string>{"user.a:latest"});
  HttpReply ps = http_get(port(), "/api/ps");
  EXPECT_EQ(ps.json()["models"][0]["expires_at"], "2999-12-31T23:59:59Z")
      << "no keep-alive: loaded until told otherwise; " << ps.body;
  EXPECT_TRUE(ps.json()["models"][0]["details"].is_object()) << ps.body;

  // A request's keep_alive sets when it goes (Lemonade 9.4.1's expires_at
  // was a constant).
  const auto asked = std::chrono::system_clock::now();
  ASSERT_EQ(
      http_post(port(), "/api/generate",
                json{{"model", "user.a"}, {"prompt", "x"}, {"stream", false}, {"keep_alive", "1h"}})
          .status,
      200);
  const std::string expires = http_get(port(), "/api/ps").json()["models"][0]["expires_at"];
  std::tm tm{};
  ASSERT_NE(strptime(expires.c_str(), "%Y-%m-%dT%H:%M:%S", &tm), nullptr) << expires;
  const auto at = std::chrono::system_clock::from_time_t(timegm(&tm));
  EXPECT_GT(at, asked + std::chrono::minutes(59)) << expires;
  EXPECT_LT(at, asked + std::chrono::minutes(61)) << expires;

  auto unload = stream("/api/generate", json{{"model", "user.a"}, {"keep_alive", 0}});
  ASSERT_EQ(unload.size(), 1u);
  EXPECT_EQ(unload[0]["done_reason"], "unload");
  EXPECT_TRUE(listed("/api/ps").empty());
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
}

TEST_F(OllamaApiTest, ModelRoutes) {
  env_.add_llm("a");
  env_.add_embedding("e");
  env_.add_whisper("w");
  env_.add_missing_llm("gone");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto tags = listed("/api/tags");
  EXPECT_TRUE(has(tags, "user.a:latest"));
  EXPECT_TRUE(has(tags, "user.e:latest"));
  EXPECT_FALSE(has(tags, "user.w:latest")) << "not a chat or embedding model";
  EXPECT_FALSE(has(tags, "user.gone:latest")) << "not downloaded";
  const json models = http_get(port(), "/api/tags").json()["models"];
  ASSERT_FALSE(models.empty());
  for (const auto& m : models) {
    EXPECT_TRUE(m["size"].is_number_integer()) << m.dump();
    EXPECT_EQ(m["digest"].get<std::string>().size(), 64u) << m.dump();
    EXPECT_TRUE(m["details"]["format"].is_string()) << m.dump();
  }

  HttpReply show = http_post(port(), "/api/show", json{{"model", "user.a:latest"}});
  ASSERT_EQ(show.status, 200) << show.body;
  EXPECT_EQ(show.json()["capabilities"], json({"completion"}));
  EXPECT_EQ(show.json()["details"]["format"], "gguf");
  HttpReply show_e = http_post(port(), "/api/show", json{{"name", "user.e"}});
  ASSERT_EQ(show_e.status, 200) << show_e.body;
  EXPECT_EQ(show_e.json()["capabilities"], json({"embedding"}));
  expect_ollama_error(http_post(port(), "/api/show", json{{"model", "user.nope"}}), 404,
                      "show of an unknown model");

  HttpReply version = http_get(port(), "/api/version");
  ASSERT_EQ(version.status, 200);
  EXPECT_TRUE(version.json()["version"].is_string());

  // A model that is on disk already: pulling it succeeds at once.
  HttpReply pull = http_post(port(), "/api/pull", json{{"model", "user.a"}, {"stream", false}});
  ASSERT_EQ(pull.status, 200) << pull.body;
  EXPECT_EQ(pull.json(), json({{"status", "success"}}));
  auto pulled = stream("/api/pull", json{{"name", "user.a:latest"}});
  ASSERT_EQ(pulled.size(), 2u);
  EXPECT_EQ(pulled.front(), json({{"status", "pulling manifest"}})) << "Ollama's first line";
  EXPECT_EQ(pulled.back(), json({{"status", "success"}}));
  expect_ollama_error(http_post(port(), "/api/pull", json{{"model", "user.nope"}}), 404,
                      "pull of an unknown model");

  HttpReply del = http_request(port(), "DELETE", "/api/delete", json{{"model", "user.a"}}.dump());
  EXPECT_EQ(del.status, 200) << del.body;
  EXPECT_FALSE(has(listed("/api/tags"), "user.a:latest"));
  expect_ollama_error(
      http_request(port(), "DELETE", "/api/delete", json{{"model", "user.a"}}.dump()), 404,
      "delete of a model that is gone");
}

TEST_F(OllamaApiTest, Embeddings) {
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply embed =
      http_post(port(), "/api/embed", json{{"model", "user.e"}, {"input", {"hello", "world"}}});
  ASSERT_EQ(embed.status, 200) << embed.body;
  json j = embed.json();
  EXPECT_EQ(j["model"], "user.e");
  ASSERT_EQ(j["embeddings"].size(), 2u) << embed.body;
  EXPECT_EQ(j["embeddings"][0].size(), 8u);
  EXPECT_NE(j["embeddings"][0], j["embeddings"][1]);
  EXPECT_GT(j["total_duration"].get<std::int64_t>(), 0);
  HttpReply legacy =
      http_post(port(), "/api/embeddings", json{{"model", "user.e"}, {"prompt", "hello"}});
  ASSERT_EQ(legacy.status, 200) << legacy.body;
  EXPECT_EQ(legacy.json(), json({{"embedding", j["embeddings"][0]}}));
  expect_ollama_error(http_post(port(), "/api/embed",
                                json{{"model", "user.e"}, {"input", "x"}, {"truncate", true}}),
                      400, "truncate");
}

TEST_F(OllamaApiTest, ErrorsUseOllamasShape) {
  env_.add_llm("a");
  const std::string broken = env_.add_llm("broken");
  env_.write_sidecar(broken, {{"error_status", {{"status", 500}, {"message", "kaboom"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  expect_ollama_error(http_post(port(), "/api/chat", chat_request("user.nope")), 404,
                      "an unknown model");
  HttpReply num_ctx =
      http_post(port(), "/api/chat", chat_request("user.a", {{"options", {{"num_ctx", 8192}}}}));
  expect_ollama_error(num_ctx, 400, "a load-time option");
  EXPECT_NE(num_ctx.body.find("num_ctx"), std::string::npos) << num_ctx.body;
  expect_ollama_error(
      http_post(port(), "/api/generate", json{{"model", "user.a"}, {"prompt", "x"}, {"raw", true}}),
      400, "raw");
  expect_ollama_error(http_post(port(), "/api/chat", std::string("{oops")), 400, "malformed JSON");
  for (const char* path : {"/api/create", "/api/copy", "/api/push", "/api/blobs/sha256:00"}) {
    expect_ollama_error(http_post(port(), path, json{{"model", "x"}}), 501,
                        std::string("a route the router does not have: ") + path);
  }
  // A blob upload as `ollama create` sends it: any media type and any size
  // get 501, answered before the body (not 415, nor 413 past --max-body-size).
  expect_ollama_error(raw_request(port(), "POST", "/api/blobs/sha256:01",
                                  {{"Content-Type", "application/octet-stream"}}, "GGUF\x03"),
                      501, "a blob upload");
  expect_ollama_error(raw_exchange(port(),
                                   "POST /api/blobs/sha256:02 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: application/octet-stream\r\n"
                                   "Content-Length: 107374182400\r\nConnection: close\r\n\r\n"),
                      501, "a 100 GB blob, refused before its body");
  EXPECT_EQ(raw_request(port(), "HEAD", "/api/blobs/sha256:01", {}).status, 501)
      << "the check for a blob";
  expect_ollama_error(raw_request(port(), "FOO", "/api/chat", {}), 501,
                      "a method HTTP does not define, on an Ollama route");
  expect_ollama_error(http_get(port(), "/api/chat"), 405, "a wrong method");
  HttpReply backend = http_post(port(), "/api/chat", chat_request("user.broken"));
  expect_ollama_error(backend, 500, "the backend's error");
  EXPECT_NE(backend.body.find("kaboom"), std::string::npos) << backend.body;
}

TEST_F(OllamaApiTest, AStreamThatBreaksEndsWithAnErrorLine) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"stream_error_after_chunks", 2}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto lines = stream("/api/chat", chat_request("user.a", {{"options", {{"num_predict", 6}}}}));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1]["done"], false);
  EXPECT_TRUE(lines[2]["error"].is_string()) << lines[2].dump();
  EXPECT_FALSE(lines[2].contains("done"));
}

TEST_F(OllamaApiTest, TheApiKeyIsABearerToken) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", "s3cret"}));
  expect_ollama_error(http_get(port(), "/api/tags"), 401, "tags without the key");
  expect_ollama_error(http_post(port(), "/api/chat", chat_request("user.a")), 401,
                      "chat without the key");
  HttpReply ok = raw_request(port(), "GET", "/api/tags", {{"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(OllamaApiTest, OllamaPortIsASecondListener) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--ollama-port", "0"}));
  ASSERT_TRUE(router().wait_for_log("Ollama API also served on"));
  std::smatch m;
  const std::string log = router().log_text();
  const std::regex line(R"(Ollama API also served on http://127\.0\.0\.1:(\d+))");
  ASSERT_TRUE(std::regex_search(log, m, line)) << log;
  const int ollama = std::stoi(m[1]);
  ASSERT_GT(ollama, 0);
  EXPECT_NE(ollama, port());

  HttpReply root = http_get(ollama, "/");
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(root.body, "Ollama is running");
  EXPECT_NE(http_get(port(), "/").body, "Ollama is running") << "the main port keeps its page";
  EXPECT_EQ(http_get(ollama, "/api/version").status, 200);
  EXPECT_TRUE(has(
      [&] {
        std::vector<std::string> names;
        const json models = http_get(ollama, "/api/tags").json()["models"];
        for (const auto& e : models) {
          names.push_back(e["name"].get<std::string>());
        }
        return names;
      }(),
      "user.a:latest"));
  auto lines = stream("/api/chat", chat_request("user.a"), ollama);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines.back()["done"], true);
  // The same router behind both ports: the model loaded through one is
  // loaded for the other.
  EXPECT_EQ(listed("/api/ps"), std::vector<std::string>{"user.a:latest"});
}

}  // namespace
}  // namespace lemon::testing
