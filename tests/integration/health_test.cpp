// Auto-load through chat/completions, the API prefixes, and /health's fields
// (issue #2 §7.1).
#include <chrono>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using HealthTest = RouterTest;

double unix_now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST_F(HealthTest, ChatAutoLoadsTheModelAndPassesTheBackendReplyThrough) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto before = health(port());
  EXPECT_TRUE(before["all_models_loaded"].empty()) << before.dump();
  EXPECT_TRUE(before["model_loaded"].is_null()) << before.dump();

  HttpReply r = chat(port(), "user.a", {{"max_tokens", 3}});
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  EXPECT_NE(r.header("Content-Type").find("application/json"), std::string::npos);
  auto j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "user.a");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "The quick brown");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  // Fields only llama-server sends: the body is the backend's, untouched.
  EXPECT_EQ(j["system_fingerprint"], "b6000-fake");
  EXPECT_EQ(j["timings"]["predicted_n"], 3);

  auto entry = loaded_entry(health(port()), "user.a");
  ASSERT_TRUE(entry.has_value());
  auto state = fake_state((*entry)["backend_url"]);
  EXPECT_EQ(state["requests"], 1);
  EXPECT_EQ(state["completed"], 1);
  EXPECT_EQ(router().count_log("starting user.a:"), 1);
}

TEST_F(HealthTest, EveryApiPrefixReachesTheSameBackend) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const char* path : {"/api/v1/chat/completions", "/v1/chat/completions",
                           "/api/v0/chat/completions", "/v0/chat/completions"}) {
    HttpReply r = chat(port(), "user.a", {{"max_tokens", 2}}, path);
    ASSERT_EQ(r.status, 200) << path << ": " << r.error << r.body;
    EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "The quick") << path;
  }
  auto entry = loaded_entry(health(port()), "user.a");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(fake_state((*entry)["backend_url"])["requests"], 4);
  EXPECT_EQ(router().count_log("starting user.a:"), 1);
  for (const char* path : {"/api/v1/health", "/v1/health", "/api/v0/health", "/v0/health"}) {
    HttpReply h = http_get(port(), path);
    EXPECT_EQ(h.status, 200) << path;
    EXPECT_EQ(h.json()["model_loaded"], "user.a") << path;
  }
}

TEST_F(HealthTest, ReportsEveryFieldOfTheLoadedServer) {
  const std::string path = env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2", "3", "4", "5", "6"}));
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  const double chatted_at = unix_now_seconds();

  // The lease is released just after the reply is written.
  nlohmann::json h;
  ASSERT_TRUE(eventually([&] {
    h = health(port());
    auto e = loaded_entry(h, "user.a");
    return e && (*e)["in_flight"] == 0;
  })) << h.dump();
  EXPECT_EQ(h["status"], "ok");
  EXPECT_EQ(h["version"], LEMON_API_VERSION);
  EXPECT_EQ(h["model_loaded"], "user.a");
  EXPECT_EQ(h["checkpoint_loaded"], path);
  ASSERT_EQ(h["all_models_loaded"].size(), 1u) << h.dump();
  auto e = h["all_models_loaded"][0];
  EXPECT_EQ(e["model_name"], "user.a");
  EXPECT_EQ(e["checkpoint"], path);
  ASSERT_TRUE(e["last_use"].is_number()) << e.dump();
  EXPECT_NEAR(e["last_use"].get<double>(), chatted_at, 10.0);
  EXPECT_EQ(e["type"], "llm");
  EXPECT_EQ(e["device"], "cpu");
  EXPECT_EQ(e["recipe"], "llamacpp");
  ASSERT_TRUE(e["recipe_options"].is_object()) << e.dump();
  EXPECT_EQ(e["recipe_options"]["ctx_size"], 4096);
  EXPECT_EQ(e["recipe_options"]["llamacpp_backend"], "cpu");
  EXPECT_EQ(e["in_flight"], 0);

  ASSERT_TRUE(e["backend_url"].is_string());
  auto state = fake_state(e["backend_url"]);
  EXPECT_EQ(state["program"], "llama-server");
  EXPECT_EQ(state["model"], path);
  ASSERT_TRUE(e["pid"].is_number_integer()) << e.dump();
  EXPECT_EQ(e["pid"], state["pid"]);

  EXPECT_EQ(h["max_models"], (nlohmann::json{{"llm", 2},
                                             {"embedding", 3},
                                             {"reranking", 4},
                                             {"audio", 5},
                                             {"image", 6},
                                             {"transcription", 5}}));
}

TEST_F(HealthTest, ModelLoadedIsTheMostRecentlyLoadedServer) {
  const std::string a = env_.add_llm("a");
  const std::string b = env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  auto h = health(port());
  EXPECT_EQ(h["model_loaded"], "user.a");
  EXPECT_EQ(h["checkpoint_loaded"], a);

  ASSERT_NO_FATAL_FAILURE(load_ok("user.b"));
  h = health(port());
  EXPECT_EQ(h["model_loaded"], "user.b");
  EXPECT_EQ(h["checkpoint_loaded"], b);

  // Using a loaded model is not loading it.
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  h = health(port());
  EXPECT_EQ(h["model_loaded"], "user.b");
  EXPECT_EQ(loaded_names(h), (std::vector<std::string>{"user.a", "user.b"}));
}

TEST_F(HealthTest, InFlightCountsAnOpenStream) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  SseStream stream(port(), "/api/v1/chat/completions", stream_body("user.a", 1000, 100).dump());
  ASSERT_TRUE(stream.read_head());
  ASSERT_EQ(stream.status(), 200);
  auto first = stream.next_data();
  ASSERT_TRUE(first.has_value());
  ASSERT_FALSE(first->data.empty());

  auto entry = loaded_entry(health(port()), "user.a");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ((*entry)["in_flight"], 1);
  const std::string url = (*entry)["backend_url"];
  EXPECT_EQ(fake_state(url)["active"], 1);

  stream.disconnect();
  // The router notices the client left, cancels upstream and releases the lease.
  EXPECT_TRUE(eventually([&] {
    auto e = loaded_entry(health(port()), "user.a");
    return e && (*e)["in_flight"] == 0;
  }));
  EXPECT_TRUE(eventually([&] { return fake_state(url)["cancelled"] == 1; }));
}

}  // namespace
}  // namespace lemon::testing
