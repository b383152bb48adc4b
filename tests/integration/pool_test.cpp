// The pool against the real router and fakes (issue #13 §2, §2a, §3): a
// replica starts when requests queue and stops when idle, requests go to the
// least busy replica, keep_alive unloads idle models, and a load that would
// evict a busy model waits, but not past --max-starvation.
#include <future>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_events.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using PoolTest = RouterTest;
using Json = nlohmann::json;

using Events = RouterEvents;

std::string slow_chat(const std::string& model) {
  return chat_body(model, {{"lemon_fake", {{"response_delay_ms", 30000}}}}).dump();
}

Json replicas(int port, const std::string& model) {
  auto entry = loaded_entry(health(port), model);
  return entry ? (*entry)["replicas"] : Json::array();
}

TEST_F(PoolTest, AReplicaStartsUnderLoadServesTheLeastBusyAndStopsWhenIdle) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-replicas", "2", "--scale-up-after", "0.2", "--scale-down-after", "0.3"}));
  Events events(port());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 1}}).status, 200);
  const std::string first_url = loaded_field(health(port()), "user.a", "backend_url");

  SseStream busy(port(), "/api/v1/chat/completions", slow_chat("user.a"));
  ASSERT_TRUE(eventually([&] { return fake_state(first_url)["active"] == 1; }));
  // A second request finds the one slot taken, waits, and the waiting starts
  // a replica, which then serves it; the fake holds it there (a gate), so the
  // replica stays busy while the test looks.
  auto held = [&] {
    return std::async(std::launch::async, [&] {
      return chat(port(), "user.a", {{"max_tokens", 3}, {"lemon_fake", {{"gate", "start"}}}});
    });
  };
  std::future<HttpReply> second = held();
  auto started = events.next("replica_started", "user.a");
  ASSERT_TRUE(started.has_value()) << "no replica started for the waiting request";
  EXPECT_EQ((*started)["replica"], 1);
  Json both;
  ASSERT_TRUE(eventually([&] {
    both = replicas(port(), "user.a");
    return both.size() == 2 && both[1]["backend_url"].is_string();
  })) << both.dump();
  EXPECT_NE(both[0]["pid"], both[1]["pid"]);
  EXPECT_NE(both[0]["backend_url"], both[1]["backend_url"]);
  const std::string second_url = both[1]["backend_url"];
  ASSERT_TRUE(fake_holds(second_url, 1)) << "the replica serves the waiting request";
  Json first_argv = fake_state(first_url)["argv"];
  Json second_argv = fake_state(second_url)["argv"];
  ASSERT_EQ(first_argv.size(), second_argv.size()) << "the same options, another port";

  // A third request waits for a free slot; the replica that frees first
  // serves it at once (no idle moment in between), never the busy one.
  std::future<HttpReply> third = held();
  ASSERT_TRUE(
      eventually([&] { return loaded_field(health(port()), "user.a", "slots")["waiting"] == 1; }));
  release_fake_gates(second_url);
  ASSERT_EQ(second.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(second.get().status, 200);
  ASSERT_TRUE(fake_reached_gate(second_url, 2)) << "the third request went to the replica";
  release_fake_gates(second_url);
  ASSERT_EQ(third.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(third.get().status, 200);
  EXPECT_EQ(fake_state(second_url)["completed"], 2);
  EXPECT_EQ(fake_state(first_url)["completed"], 0);

  // Idle past --scale-down-after: the replica goes, the first one stays.
  auto stopped = events.next("replica_stopped", "user.a");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["reason"], "scale-down");
  Json one = replicas(port(), "user.a");
  ASSERT_EQ(one.size(), 1u) << one.dump();
  EXPECT_EQ(one[0]["backend_url"], first_url) << "the busy replica stays";
  busy.disconnect();
}

TEST_F(PoolTest, KeepAliveZeroUnloadsTheModelAfterItsRequest) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  Events events(port());
  auto r = chat(port(), "user.a", {{"keep_alive", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto stopped = events.next("server_stopped", "user.a");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["reason"], "keep-alive");
  EXPECT_TRUE(loaded_names(health(port())).empty());
  EXPECT_EQ(chat(port(), "user.a", {{"keep_alive", "soon"}}).status, 400);
}

TEST_F(PoolTest, AKeepAliveDurationUnloadsAnIdleModelAndMinusOneKeepsIt) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2", "--keep-alive", "5m"}));
  Events events(port());
  ASSERT_EQ(chat(port(), "user.b", {{"keep_alive", -1}}).status, 200);
  ASSERT_EQ(chat(port(), "user.a", {{"keep_alive", "300ms"}}).status, 200);
  auto stopped = events.next("server_stopped", "user.a");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["reason"], "keep-alive");
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.b"}))
      << "user.b said -1 (forever) and --keep-alive is 5 minutes";
  EXPECT_EQ(events.count("server_stopped", "user.b"), 0);
}

TEST_F(PoolTest, AlternatingRequestsDoNotSwapWhileTheLoadedModelIsBusy) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  Events events(port());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 4}}).status, 200);
  // The event may follow the load's answer by a moment: wait for it here.
  ASSERT_TRUE(events.next("load_succeeded", "user.a").has_value());
  const std::string a_url = loaded_field(health(port()), "user.a", "backend_url");
  // user.a is busy (one of its 4 slots); requests for B and A alternate.
  SseStream busy(port(), "/api/v1/chat/completions",
                 chat_body("user.a", {{"lemon_fake", {{"response_delay_ms", 30000}}}}).dump());
  ASSERT_TRUE(eventually([&] { return fake_state(a_url)["active"] == 1; }));
  std::future<HttpReply> b1 =
      std::async(std::launch::async, [&] { return chat(port(), "user.b"); });
  ASSERT_TRUE(events.next("load_queued", "user.b").has_value());
  // A stays loaded and serving: these do not wait for B, nor swap.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(chat(port(), "user.a").status, 200);
  }
  EXPECT_EQ(b1.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout)
      << "B waits while A is busy";
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a"})) << "B did not swap A out";
  busy.disconnect();  // A goes idle: now B loads, once
  ASSERT_EQ(b1.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b1.get().status, 200);
  ASSERT_TRUE(events.next("load_succeeded", "user.b").has_value());
  EXPECT_EQ(events.count("load_succeeded", "user.a"), 1) << "A was loaded once, never swapped";
}

TEST_F(PoolTest, NoModelWaitsPastMaxStarvation) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1", "--max-starvation", "0.3"}));
  Events events(port());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  SseStream endless(port(), "/api/v1/chat/completions", stream_body("user.a", 100000, 50).dump());
  ASSERT_TRUE(endless.read_head());
  ASSERT_TRUE(endless.next().has_value());
  std::future<HttpReply> b = std::async(std::launch::async, [&] { return chat(port(), "user.b"); });
  // Past --max-starvation B's load starts although A is busy: A drains.
  auto draining = events.next("drain_waiting", "user.a");
  ASSERT_TRUE(draining.has_value()) << "B's load never went ahead of the busy model";
  endless.disconnect();
  ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b.get().status, 200);
}

}  // namespace
}  // namespace lemon::testing
