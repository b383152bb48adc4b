// Saved llama.cpp slots (issue #29 §1): a planned stop saves the slots worth
// keeping through llama-server's own POST /slots/{id}?action=save into
// <cache>/slot_cache/<model>/<identity>/, and the next load of the same
// identity restores them before its first request. A refused restore
// deletes the file and the turn is computed afresh; another identity's
// files are deleted; /delete takes the model's files; the budget deletes
// the least recently used. Checked from the fake's side (/fake/state) and
// the files themselves.
#include <filesystem>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

class SlotCacheTest : public RouterTest {
 protected:
  // A long first turn, so its slot is worth saving at --slot-save-min-tokens 50.
  static Json turn(const std::string& text) {
    return {{"messages", Json::array({{{"role", "user"}, {"content", text}}})}};
  }
  static std::string long_text() {
    std::string text;
    for (int i = 0; i < 60; ++i) {
      text += "word" + std::to_string(i) + " ";
    }
    return text;
  }
  // Every saved slot file of the router's cache.
  std::vector<fs::path> slot_files() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(env_.cache_dir() + "/slot_cache", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file()) {
        out.push_back(it->path());
      }
    }
    return out;
  }
  std::string url_of(const std::string& model) {
    auto url = loaded_field(health(port()), model, "backend_url");
    return url.is_string() ? url.get<std::string>() : std::string();
  }
};

TEST_F(SlotCacheTest, AnEvictedModelComesBackWithItsSlotRestored) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--max-loaded-models", "1", "--slot-save-min-tokens", "50"}));
  const std::string first = long_text();
  ASSERT_EQ(chat(port(), "user.a", turn(first)).status, 200);
  // A short chat of b's stays below the threshold: nothing of b is saved.
  PidWatch a(loaded_pid(port(), "user.a"));
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  ASSERT_TRUE(a.wait_exit(kWait));
  ASSERT_TRUE(router().wait_for_log("'user.a': saved slot 0"));
  auto files = slot_files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename(), "slot-0.bin");
  EXPECT_GT(fs::file_size(files[0]), 50u * 256u) << "its size grows with its tokens";

  // Back: the slot is restored before the first request, and the same
  // conversation's next turn reuses it.
  Json next = turn(first);
  next["messages"].push_back({{"role", "assistant"}, {"content", "fine"}});
  next["messages"].push_back({{"role", "user"}, {"content", "and then?"}});
  ASSERT_EQ(chat(port(), "user.a", next).status, 200);
  const Json state = fake_state(url_of("user.a"));
  EXPECT_EQ(state["slots_restored"], 1) << state.dump();
  EXPECT_GT(state["last_cache_n"].get<int>(), 40) << "the restored prefix was not evaluated again";
  EXPECT_EQ(router().count_log("'user.a': restored slot 0"), 1);
  auto metrics = http_get(port(), "/metrics");
  EXPECT_NE(
      metrics.body.find("lemonade_slot_files_total{model=\"user.a\",event=\"slot_restored\"} 1"),
      std::string::npos)
      << metrics.body.substr(0, 200);
  // /api/v1/models shows the saved bytes.
  const Json listed = http_get(port(), "/api/v1/models").json();
  for (const auto& m : listed["data"]) {
    if (m["id"] == "user.a") {
      EXPECT_GT(m["saved_slots_bytes"].get<long long>(), 0);
    }
  }
}

TEST_F(SlotCacheTest, ARefusedRestoreDeletesTheFileAndTheTurnIsComputedAfresh) {
  const std::string a_path = env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--max-loaded-models", "1", "--slot-save-min-tokens", "50"}));
  ASSERT_EQ(chat(port(), "user.a", turn(long_text())).status, 200);
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  ASSERT_TRUE(router().wait_for_log("'user.a': saved slot 0"));
  ASSERT_EQ(slot_files().size(), 1u);
  env_.write_sidecar(a_path, {{"slot_restore_fails", true}});
  auto reply = chat(port(), "user.a", turn(long_text()));
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_TRUE(router().wait_for_log("'user.a': slot 0 was not restored"));
  EXPECT_TRUE(slot_files().empty()) << "a refused file is gone";
  EXPECT_EQ(fake_state(url_of("user.a"))["slot_restores_refused"], 1);
}

TEST_F(SlotCacheTest, ARequestForAnotherSlotStartsWhileASlotIsRestored) {
  const std::string a_path = env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--max-loaded-models", "1", "--slot-save-min-tokens", "50"}));
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}}).status, 200);
  ASSERT_EQ(chat(port(), "user.a", turn(long_text())).status, 200);
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  ASSERT_TRUE(router().wait_for_log("'user.a': saved slot"));
  ASSERT_EQ(slot_files().size(), 1u);
  // The restore waits at the fake's gate: the model is published before it,
  // and a request takes the other slot meanwhile.
  env_.write_sidecar(a_path, {{"slot_restore_gate", true}});
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}}).status, 200);
  const std::string url = url_of("user.a");
  ASSERT_TRUE(fake_holds(url, 1)) << "the restore is under way";
  HttpReply other = chat(port(), "user.a", turn("a short question"));
  EXPECT_EQ(other.status, 200) << other.body;
  EXPECT_EQ(fake_state(url)["held"], 1) << "answered while the restore still waited";
  EXPECT_EQ(router().count_log("'user.a': restored slot"), 0);
  release_fake_gates(url);
  EXPECT_TRUE(router().wait_for_log("'user.a': restored slot"));
  EXPECT_EQ(fake_state(url)["slots_restored"], 1);
}

TEST_F(SlotCacheTest, ATruncatedFileIsRefusedAndDeleted) {
  const std::string a_path = env_.add_llm("a");
  env_.add_llm("b");
  env_.write_sidecar(a_path, {{"slot_save_truncates", true}});
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--max-loaded-models", "1", "--slot-save-min-tokens", "50"}));
  ASSERT_EQ(chat(port(), "user.a", turn(long_text())).status, 200);
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  ASSERT_TRUE(router().wait_for_log("'user.a': saved slot 0"));
  ASSERT_EQ(chat(port(), "user.a", turn(long_text())).status, 200);
  EXPECT_TRUE(router().wait_for_log("'user.a': slot 0 was not restored"));
  EXPECT_TRUE(slot_files().empty());
}

TEST_F(SlotCacheTest, AnotherIdentityDeletesTheFilesAndDeleteTakesTheRest) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--max-loaded-models", "1", "--slot-save-min-tokens", "50"}));
  ASSERT_EQ(chat(port(), "user.a", turn(long_text())).status, 200);
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  ASSERT_TRUE(router().wait_for_log("'user.a': saved slot 0"));
  const auto saved = slot_files();
  ASSERT_EQ(saved.size(), 1u);
  // Another context per slot is another identity: its old files go.
  auto reloaded = load(port(), "user.a", {{"ctx_size", 8192}});
  ASSERT_EQ(reloaded.status, 200) << reloaded.body;
  EXPECT_TRUE(router().wait_for_log("deleted the slots saved by a server of another identity"));
  EXPECT_FALSE(fs::exists(saved[0]));
  EXPECT_EQ(fake_state(url_of("user.a"))["slots_restored"], 0);
  // Its new slots, saved at the unload, go with the model's /delete.
  ASSERT_EQ(chat(port(), "user.a", turn(long_text())).status, 200);
  ASSERT_EQ(http_post(port(), "/api/v1/unload", Json{{"model_name", "user.a"}}).status, 200);
  ASSERT_TRUE(router().wait_for_log("'user.a': saved slot 0", 2));
  ASSERT_EQ(slot_files().size(), 1u);
  ASSERT_EQ(http_post(port(), "/api/v1/delete", Json{{"model_name", "user.a"}}).status, 200);
  EXPECT_TRUE(slot_files().empty());
}

TEST_F(SlotCacheTest, TheBudgetDeletesTheLeastRecentlyUsedFiles) {
  env_.add_llm("a");
  env_.add_llm("b");
  env_.add_llm("c");
  // Each file holds the rendered first turn, about 115 tokens x 256 bytes
  // (checked below): one fits in 45K, two do not.
  constexpr std::uintmax_t kBudget = 45 * 1024;
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "1", "--slot-save-min-tokens", "50", "--slot-cache-size", "45K"}));
  ASSERT_EQ(chat(port(), "user.a", turn(long_text())).status, 200);
  ASSERT_EQ(chat(port(), "user.b", turn(long_text())).status, 200);
  ASSERT_TRUE(router().wait_for_log("'user.a': saved slot 0"));
  const auto first = slot_files();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_LT(fs::file_size(first[0]), kBudget);
  ASSERT_GT(fs::file_size(first[0]) * 2, kBudget);
  ASSERT_EQ(chat(port(), "user.c").status, 200);
  ASSERT_TRUE(router().wait_for_log("'user.b': saved slot 0"));
  ASSERT_TRUE(router().wait_for_log("slot cache over --slot-cache-size"));
  const auto files = slot_files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].string().find("user.b"), std::string::npos) << files[0];
}

TEST_F(SlotCacheTest, OffKeepsNoSlotsAndGivesNoSavePath) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "1", "--slot-save-min-tokens", "50", "--slot-cache-size", "off"}));
  ASSERT_EQ(chat(port(), "user.a", turn(long_text())).status, 200);
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  EXPECT_EQ(router().count_log("--slot-save-path"), 0);
  EXPECT_TRUE(slot_files().empty());
}

}  // namespace
}  // namespace lemon::testing
