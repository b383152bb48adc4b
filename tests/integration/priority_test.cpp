// Model priorities (issue #29 §3): "priority" on POST /load and in
// recipe_options.json. A load evicts only models of an equal or lower
// priority; one that only a higher priority's eviction would make room for
// waits in the queue, while the higher one keeps serving, until it leaves.
// A waiting load that nobody waits for any more is dropped.
#include <thread>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using PriorityTest = RouterTest;
using Json = nlohmann::json;

constexpr const char* kWaitsLog = "'user.side' (priority 0) waits in the queue";

TEST_F(PriorityTest, ALowerPriorityWaitsForAHigherOneAndNeverEvictsIt) {
  env_.add_llm("main");
  env_.add_llm("side");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  auto loaded = load(port(), "user.main", {{"priority", 5}});
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_EQ(loaded.json()["priority"], 5);
  const int main_pid = loaded_pid(port(), "user.main");
  EXPECT_EQ(loaded_field(health(port()), "user.main", "priority"), 5);

  HttpReply side;
  std::thread waiting([&] { side = chat(port(), "user.side"); });
  ASSERT_TRUE(router().wait_for_log(kWaitsLog)) << "the automatic load waits";
  HttpReply explicit_load;
  std::thread commanded([&] { explicit_load = load(port(), "user.side"); });
  // The explicit load joins the same queued job; the higher priority keeps
  // its slot and serves meanwhile.
  ASSERT_EQ(chat(port(), "user.main").status, 200);
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.main"}));
  EXPECT_EQ(loaded_pid(port(), "user.main"), main_pid);

  PidWatch main_watch(main_pid);
  ASSERT_EQ(http_post(port(), "/api/v1/unload", Json{{"model_name", "user.main"}}).status, 200);
  waiting.join();
  commanded.join();
  EXPECT_EQ(side.status, 200) << side.body;
  EXPECT_EQ(explicit_load.status, 200) << explicit_load.body;
  EXPECT_TRUE(main_watch.wait_exit(kWait));
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.side"}));
  EXPECT_EQ(router().count_log(kWaitsLog), 1) << "logged once, however long it waits";
}

TEST_F(PriorityTest, AnEqualOrHigherPriorityEvictsAsUsual) {
  env_.add_llm("low");
  env_.add_llm("high");
  env_.add_llm("peer");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  pid_t low_pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.low", &low_pid));
  PidWatch low(low_pid);
  auto high = load(port(), "user.high", {{"priority", 3}});
  ASSERT_EQ(high.status, 200) << high.body;
  EXPECT_TRUE(low.wait_exit(kWait));
  PidWatch high_watch(loaded_pid(port(), "user.high"));
  auto peer = load(port(), "user.peer", {{"priority", 3}});
  ASSERT_EQ(peer.status, 200) << peer.body;
  EXPECT_TRUE(high_watch.wait_exit(kWait));
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.peer"}));
  // /api/v1/models shows the loaded model's priority, and 0 for others.
  auto models = http_get(port(), "/api/v1/models");
  ASSERT_EQ(models.status, 200);
  std::map<std::string, int> priorities;
  const Json listed = models.json();
  for (const auto& m : listed["data"]) {
    priorities[m["id"].get<std::string>()] = m["priority"].get<int>();
  }
  EXPECT_EQ(priorities["peer"], 3) << models.body;
  EXPECT_EQ(priorities["high"], 0) << "a given priority lasts while the model is loaded";
  EXPECT_EQ(priorities["low"], 0);
}

TEST_F(PriorityTest, AWaitingLoadThatNobodyWaitsForIsDropped) {
  env_.add_llm("main");
  env_.add_llm("side");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  ASSERT_EQ(load(port(), "user.main", {{"priority", 1}}).status, 200);
  {
    SseStream s(port(), "/api/v1/chat/completions",
                Json{{"model", "user.side"},
                     {"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})},
                     {"stream", true}}
                    .dump());
    ASSERT_TRUE(s.connected());
    ASSERT_TRUE(router().wait_for_log(kWaitsLog));
    s.disconnect();
  }
  ASSERT_TRUE(router().wait_for_log("'user.side': nobody waits for its load any more"));
  ASSERT_EQ(http_post(port(), "/api/v1/unload", Json{{"model_name", "user.main"}}).status, 200);
  // Nothing loads it once the way is clear: an explicit load of main comes
  // back first and alone.
  ASSERT_NO_FATAL_FAILURE(load_ok("user.main"));
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.main"}));
  EXPECT_EQ(router().count_log("starting user.side"), 0);
}

TEST_F(PriorityTest, ASavedPriorityAppliesAtEveryLoadAndABadOneIsRefused) {
  env_.add_llm("main");
  env_.add_llm("side");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  expect_error(load(port(), "user.main", {{"priority", "high"}}), 400, "invalid_request_error",
               "priority", "a priority that is not an integer");
  expect_error(load(port(), "user.main", {{"priority", 1.5}}), 400, "invalid_request_error",
               "priority", "a fractional priority");
  expect_error(load(port(), "user.main", {{"priority", 1001}}), 400, "invalid_request_error",
               "priority", "a priority out of range");
  EXPECT_TRUE(loaded_names(health(port())).empty()) << "a refused load loads nothing";
  ASSERT_EQ(load(port(), "user.main", {{"priority", 2}, {"save_options", true}}).status, 200);
  ASSERT_EQ(http_post(port(), "/api/v1/unload", Json{{"model_name", "user.main"}}).status, 200);
  // Loaded again with no priority, it has its saved one.
  ASSERT_NO_FATAL_FAILURE(load_ok("user.main"));
  EXPECT_EQ(loaded_field(health(port()), "user.main", "priority"), 2);
  auto model = http_get(port(), "/api/v1/models/user.main");
  ASSERT_EQ(model.status, 200);
  EXPECT_EQ(model.json()["priority"], 2);
  // A priority given to a loaded model with the same options changes it at once.
  ASSERT_EQ(load(port(), "user.main", {{"priority", -1}}).status, 200);
  EXPECT_EQ(loaded_field(health(port()), "user.main", "priority"), -1);
  PidWatch main_watch(loaded_pid(port(), "user.main"));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.side"));
  EXPECT_TRUE(main_watch.wait_exit(kWait)) << "priority -1 is below side's 0";
}

}  // namespace
}  // namespace lemon::testing
