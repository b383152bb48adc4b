// Saved slots against a real llama-server (issue #29 §1): the correctness
// proof. At temperature 0 with a fixed seed, the next turn of a conversation
// whose model was swapped out and back (its slot saved at the eviction and
// restored at the load) answers exactly what the same turn answers computed
// from scratch, and evaluates fewer prompt tokens; a session does the same
// across a router restart.
#include <csignal>
#include <filesystem>

#include <gtest/gtest.h>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/process_watch.h"

namespace lemon::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class RealSlotCacheTest : public RealLlamaTest {
 protected:
  static json ask(const json& messages) {
    return {{"messages", messages}, {"temperature", 0}, {"seed", 7}, {"max_tokens", 12}};
  }
  // The reply's text and the prompt tokens llama-server evaluated for it.
  static std::pair<std::string, int> answer(const HttpReply& r) {
    const json j = r.json();
    return {j["choices"][0]["message"].value("content", std::string()),
            j.contains("timings") ? j["timings"].value("prompt_n", -1) : -1};
  }
};

TEST_F(RealSlotCacheTest, ARestoredSlotAnswersAsARecomputedOneWithLessPromptWork) {
  add_tiny_chat("tiny");
  add_tiny_chat("other");
  ASSERT_NO_FATAL_FAILURE(
      start_real_router({"--max-loaded-models", "1", "--slot-save-min-tokens", "1"}));
  std::string long_turn = "Here is a long story about lemons:";
  for (int i = 0; i < 40; ++i) {
    long_turn += " lemon number " + std::to_string(i) + " was yellow and sour.";
  }
  json messages = json::array({{{"role", "user"}, {"content", long_turn}}});
  HttpReply first = chat(port(), "user.tiny", ask(messages));
  ASSERT_EQ(first.status, 200) << first.body;
  messages.push_back({{"role", "assistant"}, {"content", answer(first).first}});
  messages.push_back({{"role", "user"}, {"content", "and then?"}});

  // Swapped out (saved) and back (restored).
  PidWatch tiny(loaded_pid(port(), "user.tiny"));
  ASSERT_EQ(chat(port(), "user.other", {{"max_tokens", 2}}).status, 200);
  ASSERT_TRUE(tiny.wait_exit(kWait));
  ASSERT_TRUE(router().wait_for_log("'user.tiny': saved slot 0"));
  HttpReply restored = chat(port(), "user.tiny", ask(messages));
  ASSERT_EQ(restored.status, 200) << restored.body;
  ASSERT_EQ(router().count_log("'user.tiny': restored slot 0"), 1);

  // The same turn computed from scratch: no saved slot to restore.
  ASSERT_EQ(http_post(port(), "/api/v1/unload", json{{"model_name", "user.tiny"}}).status, 200);
  fs::remove_all(env_.cache_dir() + "/slot_cache");
  HttpReply fresh = chat(port(), "user.tiny", ask(messages));
  ASSERT_EQ(fresh.status, 200) << fresh.body;
  EXPECT_EQ(router().count_log("'user.tiny': restored slot 0"), 1) << "nothing was restored";

  const auto [restored_text, restored_prompt] = answer(restored);
  const auto [fresh_text, fresh_prompt] = answer(fresh);
  EXPECT_EQ(restored_text, fresh_text) << "a restore never changes the answer";
  ASSERT_GT(fresh_prompt, 0) << fresh.body;
  ASSERT_GE(restored_prompt, 0) << restored.body;
  EXPECT_LT(restored_prompt * 4, fresh_prompt)
      << "the restored prefix is not evaluated again: " << restored_prompt << " vs "
      << fresh_prompt;
}

// Issue #29 §2 on the real program: a session outlives a clean router
// restart. The drain saves its slot, the next router reads the session back
// from its journal, restores the slot when the model loads and answers the
// next turn exactly as that turn computed from scratch answers.
TEST_F(RealSlotCacheTest, ASessionContinuesAcrossARouterRestartWithItsSlotRestored) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  const std::string sessions = "/api/v1/sessions";
  HttpReply created =
      http_post(port(), sessions,
                json{{"model", "user.tiny"}, {"options", {{"temperature", 0}, {"seed", 7}}}});
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string id = created.json()["id"];
  std::string long_turn = "Here is a long story about limes:";
  for (int i = 0; i < 40; ++i) {
    long_turn += " lime number " + std::to_string(i) + " was green and sour.";
  }
  auto say = [&](const std::string& text) {
    return http_post(port(), sessions + "/" + id + "/messages",
                     json{{"role", "user"}, {"content", text}});
  };
  ASSERT_EQ(say(long_turn).status, 200);
  ASSERT_EQ(http_post(port(), sessions + "/" + id + "/generate", json{{"max_tokens", 12}}).status,
            200);
  ASSERT_EQ(say("and then?").status, 200);
  router().signal(SIGTERM);
  auto exited = router().wait_exit();
  ASSERT_TRUE(exited && exited->exited && exited->code == 0) << router().log_text();
  ASSERT_EQ(router().count_log("'user.tiny': saved slot 0"), 1) << router().log_text();

  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply resumed =
      http_post(port(), sessions + "/" + id + "/generate", json{{"max_tokens", 12}});
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  const json after = http_get(port(), sessions + "/" + id).json();
  EXPECT_EQ(after["resumed"], "restored") << after.dump();
  ASSERT_EQ(after["history"].size(), 4u) << after.dump();
  EXPECT_EQ(router().count_log("'user.tiny': restored slot 0"), 1);

  // The same turn from scratch: the history sent whole, nothing restored.
  ASSERT_EQ(http_post(port(), "/api/v1/unload", json{{"model_name", "user.tiny"}}).status, 200);
  fs::remove_all(env_.cache_dir() + "/slot_cache");
  json history = after["history"];
  history.erase(history.size() - 1);
  HttpReply fresh = chat(port(), "user.tiny", ask(history));
  ASSERT_EQ(fresh.status, 200) << fresh.body;
  const auto [resumed_text, resumed_prompt] = answer(resumed);
  const auto [fresh_text, fresh_prompt] = answer(fresh);
  EXPECT_EQ(resumed_text, fresh_text) << "a restart never changes the answer";
  EXPECT_LT(resumed_prompt * 4, fresh_prompt)
      << "the restored prefix is not evaluated again: " << resumed_prompt << " vs " << fresh_prompt;
}

}  // namespace
}  // namespace lemon::testing
