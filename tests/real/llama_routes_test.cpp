// The router's routes against a real llama-server (LEMON_REAL_LLAMA_SERVER)
// and the tiny random-weight models of ../shared/models (issue #31 §3, the
// hand checks of earlier issues made tests): chat and streaming, embeddings
// and reranking on their models, a session's turns on its slot, a preset's
// settings, and recovery after the server is killed.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/process_signal.h"
#include "support/process_watch.h"
#include "support/sse_reader.h"
#include "support/test_env.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class LlamaRoutesTest : public RealLlamaTest {
 protected:
  void add_tiny(const std::string& key, const std::string& file, const std::string& label) {
    env_.add_user_model(key, {{"checkpoint", real_model_file(file)},
                              {"recipe", "llamacpp"},
                              {"labels", {label}},
                              {"source", "local_path"}});
  }
};

TEST_F(LlamaRoutesTest, ChatAndItsStreamHaveOpenAIsShapes) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply r = chat(port(), "user.tiny", {{"max_tokens", 4}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json answer = r.json();
  EXPECT_EQ(answer["object"], "chat.completion") << r.body;
  EXPECT_TRUE(answer["choices"][0]["message"]["content"].is_string()) << r.body;
  EXPECT_GT(answer["usage"]["prompt_tokens"].get<int>(), 0) << r.body;
  EXPECT_LE(answer["usage"]["completion_tokens"].get<int>(), 4) << r.body;

  json body = chat_body(
      "user.tiny",
      {{"max_tokens", 4}, {"stream", true}, {"stream_options", {{"include_usage", true}}}});
  SseStream s(port(), "/api/v1/chat/completions", body.dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  int deltas = 0;
  bool done = false;
  json usage;
  for (const auto& e : s.rest()) {
    if (e.is_done()) {
      done = true;
      continue;
    }
    json chunk = json::parse(e.data, nullptr, false);
    ASSERT_FALSE(chunk.is_discarded()) << e.data;
    EXPECT_EQ(chunk["object"], "chat.completion.chunk") << e.data;
    if (!chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("content")) {
      ++deltas;
    }
    if (chunk.contains("usage") && chunk["usage"].is_object()) {
      usage = chunk["usage"];
    }
  }
  EXPECT_TRUE(done);
  EXPECT_TRUE(s.ended_cleanly());
  EXPECT_GE(deltas, 1);
  EXPECT_GT(usage.value("completion_tokens", 0), 0) << usage.dump();
}

TEST_F(LlamaRoutesTest, EmbeddingsAndRerankingAnswerOnTheirModels) {
  add_tiny("embed", "tiny-bert-embed.gguf", "embeddings");
  add_tiny("rerank", "tiny-bert-rerank.gguf", "reranking");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply e = http_post(port(), "/api/v1/embeddings",
                          json{{"model", "user.embed"}, {"input", {"a lemon", "a lime"}}});
  ASSERT_EQ(e.status, 200) << e.body;
  const json data = e.json()["data"];
  ASSERT_EQ(data.size(), 2u) << e.body;
  const std::size_t dim = data[0]["embedding"].size();
  EXPECT_GT(dim, 0u);
  EXPECT_EQ(data[1]["embedding"].size(), dim);
  EXPECT_TRUE(data[0]["embedding"][0].is_number_float()) << e.body;
  HttpReply b64 =
      http_post(port(), "/api/v1/embeddings",
                json{{"model", "user.embed"}, {"input", "a lemon"}, {"encoding_format", "base64"}});
  ASSERT_EQ(b64.status, 200) << b64.body;
  const std::string packed = b64.json()["data"][0]["embedding"].get<std::string>();
  EXPECT_EQ(packed.size(), (dim * 4 + 2) / 3 * 4) << "base64 of dim float32s";

  const json docs = {"lemons are yellow", "the sky", "limes are green"};
  HttpReply r = http_post(port(), "/api/v1/reranking",
                          json{{"model", "user.rerank"}, {"query", "citrus"}, {"documents", docs}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json results = r.json()["results"];
  ASSERT_EQ(results.size(), 3u) << r.body;
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i]["index"], i) << "in the documents' order: " << r.body;
    EXPECT_TRUE(results[i]["relevance_score"].is_number()) << r.body;
  }
  // A chat on an embedding model is refused before any backend sees it.
  EXPECT_EQ(chat(port(), "user.embed").status, 400);
}

// Turn two evaluates only what turn one did not: its slot kept the context.
TEST_F(LlamaRoutesTest, ASessionsSecondTurnReusesItsSlotsCache) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply created = http_post(port(), "/api/v1/sessions",
                                json{{"model", "user.tiny"}, {"system", "You are terse."}});
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string id = created.json()["id"];
  const std::string base = "/api/v1/sessions/" + id;
  for (const char* said : {"tell me about lemons", "and limes"}) {
    ASSERT_EQ(
        http_post(port(), base + "/messages", json{{"role", "user"}, {"content", said}}).status,
        200);
    HttpReply turn = http_post(port(), base + "/generate", json{{"max_tokens", 3}});
    ASSERT_EQ(turn.status, 200) << turn.body;
  }
  const json session = http_get(port(), base).json();
  EXPECT_EQ(session["turns"], 2) << session.dump();
  EXPECT_GT(session["tokens"].value("cached", 0), 0) << session.dump();
  EXPECT_EQ(session["history"].size(), 4u) << "two users, two replies: " << session.dump();
  EXPECT_EQ(http_request(port(), "DELETE", base).status, 200);
}

TEST_F(LlamaRoutesTest, APresetsSettingsReachLlamaServer) {
  add_tiny_chat("tiny");
  write_file_atomically(env_.cache_dir() + "/presets.json",
                        json{{"short",
                              {{"model", "user.tiny"},
                               {"ctx_size", 1536},
                               {"sampling", {{"temperature", 0.2}, {"top_k", 7}}}}}}
                            .dump());
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply r = chat(port(), "preset.short", {{"max_tokens", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  // Its own server (a load-time setting), named as GET presets says.
  const std::string server =
      http_get(port(), "/api/v1/presets/short").json().value("server", std::string());
  ASSERT_FALSE(server.empty());
  const int pid = loaded_pid(port(), server);
  ASSERT_GT(pid, 0) << health(port()).dump();
  EXPECT_NE(command_line(pid).find("1536"), std::string::npos) << command_line(pid);
}

TEST_F(LlamaRoutesTest, AKilledLlamaServerIsStartedAgainByTheNextRequest) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.tiny", &pid));
  ASSERT_NO_FATAL_FAILURE(signal_process(pid, SIGKILL));
  ASSERT_TRUE(wait_pid_exit(pid, std::chrono::seconds(10)));
  HttpReply r = chat(port(), "user.tiny", {{"max_tokens", 2}});
  EXPECT_EQ(r.status, 200) << r.body;
  const int again = loaded_pid(port(), "user.tiny");
  EXPECT_GT(again, 0);
  EXPECT_NE(again, pid);
}

}  // namespace
}  // namespace lemon::testing
