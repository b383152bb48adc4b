// The pool's timed decisions as a pure function with injected time (issue
// #13 §2-3): scale up after requests wait, scale down idle replicas but never
// the last, unload after the keep-alive, neither for a replica that holds
// sessions; keep_alive values as Ollama takes them.
#include <gtest/gtest.h>

#include "lemon/core/duration_text.h"
#include "lemon/router/pool_policy.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;
const PoolClock::time_point T0 = PoolClock::time_point() + 1000h;

ReplicaPoolView replica(std::uint64_t id, int index, int in_flight, PoolClock::duration idle_for,
                        bool ready = true) {
  return {id, index, in_flight, ready, T0 - idle_for};
}

ModelPoolView model(std::string name, std::vector<ReplicaPoolView> replicas, int max_replicas = 1) {
  ModelPoolView m;
  m.model = std::move(name);
  m.replicas = std::move(replicas);
  m.max_replicas = max_replicas;
  return m;
}

TEST(PoolPolicy, AReplicaStartsOnlyAfterRequestsWaitedScaleUpAfter) {
  PoolPolicy policy{2s, 60s, std::nullopt};
  auto m = model("a", {replica(1, 0, 1, 0s)}, 3);
  m.waiting = 4;
  m.waiting_since = T0 - 1500ms;
  EXPECT_TRUE(plan_pool({m}, T0, policy).scale_up.empty()) << "not yet 2 s";
  m.waiting_since = T0 - 2s;
  EXPECT_EQ(plan_pool({m}, T0, policy).scale_up, (std::vector<std::string>{"a"}));
  m.scaling_up = true;
  EXPECT_TRUE(plan_pool({m}, T0, policy).scale_up.empty()) << "one replica load at a time";
  m.scaling_up = false;
  m.replicas = {replica(1, 0, 1, 0s), replica(2, 1, 1, 0s), replica(3, 2, 1, 0s)};
  EXPECT_TRUE(plan_pool({m}, T0, policy).scale_up.empty()) << "at max_replicas";
  auto single = model("b", {replica(4, 0, 1, 0s)}, 1);
  single.waiting = 9;
  single.waiting_since = T0 - 1h;
  EXPECT_TRUE(plan_pool({single}, T0, policy).scale_up.empty()) << "the default is one replica";
}

TEST(PoolPolicy, IdleReplicasStopNewestFirstButNeverTheLast) {
  PoolPolicy policy{2s, 60s, std::nullopt};
  auto m = model("a", {replica(1, 0, 0, 2min), replica(2, 1, 0, 2min), replica(3, 2, 0, 30s)}, 3);
  EXPECT_EQ(plan_pool({m}, T0, policy).scale_down, (std::vector<std::uint64_t>{2, 1}))
      << "both long-idle replicas go, newest first; the recently used one stays";
  m.replicas = {replica(1, 0, 0, 2min), replica(2, 1, 0, 2min), replica(3, 2, 0, 2min)};
  EXPECT_EQ(plan_pool({m}, T0, policy).scale_down, (std::vector<std::uint64_t>{3, 2}));
  m.replicas = {replica(1, 0, 2, 0s), replica(2, 1, 0, 2min)};
  EXPECT_EQ(plan_pool({m}, T0, policy).scale_down, (std::vector<std::uint64_t>{2}))
      << "the busy first replica stays, the idle second goes";
  m.replicas = {replica(1, 0, 0, 1h)};
  EXPECT_TRUE(plan_pool({m}, T0, policy).scale_down.empty()) << "the last replica stays";
  m.replicas = {replica(1, 0, 0, 1h), replica(2, 1, 0, 1h, /*ready=*/false)};
  EXPECT_TRUE(plan_pool({m}, T0, policy).scale_down.empty()) << "a draining one is not counted";
}

TEST(PoolPolicy, KeepAliveUnloadsAWholeIdleModel) {
  PoolPolicy forever{2s, 60s, std::nullopt};
  auto m = model("a", {replica(1, 0, 0, 10h)});
  EXPECT_TRUE(plan_pool({m}, T0, forever).expired.empty()) << "the default keeps models loaded";
  PoolPolicy five_minutes{2s, 60s, 5min};
  EXPECT_EQ(plan_pool({m}, T0, five_minutes).expired, (std::vector<std::string>{"a"}));
  m.replicas = {replica(1, 0, 0, 4min)};
  EXPECT_TRUE(plan_pool({m}, T0, five_minutes).expired.empty());
  m.keep_alive = 0ms;  // the last request said 0
  EXPECT_EQ(plan_pool({m}, T0, five_minutes).expired, (std::vector<std::string>{"a"}));
  m.keep_alive = -1ms;  // the last request said -1
  m.replicas = {replica(1, 0, 0, 100h)};
  EXPECT_TRUE(plan_pool({m}, T0, five_minutes).expired.empty()) << "-1 is forever";
  m.keep_alive = 0ms;
  m.replicas = {replica(1, 0, 1, 0s)};
  EXPECT_TRUE(plan_pool({m}, T0, five_minutes).expired.empty()) << "never while busy";
  m.replicas = {replica(1, 0, 0, 1h)};
  m.waiting = 1;
  m.waiting_since = T0;
  EXPECT_TRUE(plan_pool({m}, T0, five_minutes).expired.empty()) << "never while requests wait";
  m.waiting = 0;
  m.replicas = {replica(1, 0, 0, 10min), replica(2, 1, 0, 1s)};
  m.keep_alive = 5min;
  EXPECT_TRUE(plan_pool({m}, T0, five_minutes).expired.empty())
      << "idle since the most recent replica's last request";
}

TEST(PoolPolicy, TheKeepAliveDeadlineIsWhatOllamaCallsExpiresAt) {
  PoolPolicy five_minutes{2s, 60s, 5min};
  auto m = model("a", {replica(1, 0, 0, 1min), replica(2, 1, 0, 3min)});
  EXPECT_EQ(keep_alive_deadline(m, T0, five_minutes), T0 - 1min + 5min)
      << "from the most recent replica's last request";
  m.keep_alive = 30s;  // the last request's own keep_alive wins
  EXPECT_EQ(keep_alive_deadline(m, T0, five_minutes), T0 - 1min + 30s);
  m.replicas = {replica(1, 0, 1, 10min)};
  EXPECT_EQ(keep_alive_deadline(m, T0, five_minutes), T0 + 30s) << "busy: it begins afterwards";
  m.keep_alive = 0ms;
  EXPECT_TRUE(plan_pool({m}, T0, five_minutes).expired.empty()) << "a busy model never expires";
  m.keep_alive = -1ms;
  EXPECT_FALSE(keep_alive_deadline(m, T0, five_minutes)) << "-1: loaded until told otherwise";
  m.keep_alive.reset();
  EXPECT_FALSE(keep_alive_deadline(m, T0, PoolPolicy{2s, 60s, std::nullopt}))
      << "no --keep-alive: the same";
  m.pinned = true;
  EXPECT_FALSE(keep_alive_deadline(m, T0, five_minutes)) << "pinned";
}

ReplicaPoolView with_sessions(ReplicaPoolView r, int sessions) {
  r.sessions = sessions;
  return r;
}

TEST(PoolPolicy, AReplicaWithSessionsIsNeverScaledDown) {
  PoolPolicy policy{2s, 60s, std::nullopt};
  // The newest replica would go first; its session keeps it, so the older
  // idle one goes instead (one ready replica stays either way).
  auto m = model("a", {replica(1, 0, 0, 2min), with_sessions(replica(2, 1, 0, 2min), 1)}, 2);
  EXPECT_EQ(plan_pool({m}, T0, policy).scale_down, (std::vector<std::uint64_t>{1}));
  m.replicas = {with_sessions(replica(1, 0, 0, 1h), 2), with_sessions(replica(2, 1, 0, 1h), 1)};
  EXPECT_TRUE(plan_pool({m}, T0, policy).scale_down.empty()) << "both hold sessions";
  m.replicas = {with_sessions(replica(1, 0, 0, 1h), 1), replica(2, 1, 0, 1h), replica(3, 2, 0, 1h)};
  EXPECT_EQ(plan_pool({m}, T0, policy).scale_down, (std::vector<std::uint64_t>{3, 2}))
      << "the replicas without sessions go; the one with a session is the one left";
  m.replicas = {replica(1, 0, 0, 1h), replica(2, 1, 0, 1h)};
  EXPECT_EQ(plan_pool({m}, T0, policy).scale_down, (std::vector<std::uint64_t>{2}))
      << "once its sessions end the usual rule applies";
}

TEST(PoolPolicy, KeepAliveNeverUnloadsAModelWhileAReplicaHoldsSessions) {
  PoolPolicy five_minutes{2s, 60s, 5min};
  auto m = model("a", {with_sessions(replica(1, 0, 0, 10h), 1)});
  EXPECT_TRUE(plan_pool({m}, T0, five_minutes).expired.empty())
      << "the session ends by --session-ttl, not by the model's keep-alive";
  m.keep_alive = 0ms;
  EXPECT_TRUE(plan_pool({m}, T0, five_minutes).expired.empty()) << "not even keep_alive 0";
  m.replicas = {replica(1, 0, 0, 10h), with_sessions(replica(2, 1, 0, 10h), 1)};
  m.max_replicas = 2;
  auto plan = plan_pool({m}, T0, five_minutes);
  EXPECT_TRUE(plan.expired.empty()) << "a session on any replica keeps the model";
  EXPECT_EQ(plan.scale_down, (std::vector<std::uint64_t>{1}))
      << "its replicas without sessions still scale down";
  m.replicas = {replica(1, 0, 0, 10h)};
  EXPECT_EQ(plan_pool({m}, T0, five_minutes).expired, (std::vector<std::string>{"a"}))
      << "once the sessions end, the keep-alive applies again";
}

TEST(KeepAlive, ParsesSecondsAndDurationsAsOllamaDoes) {
  EXPECT_EQ(parse_keep_alive("300"), 300s);
  EXPECT_EQ(parse_keep_alive("0"), 0ms);
  EXPECT_EQ(parse_keep_alive("-1"), -1ms);
  EXPECT_EQ(parse_keep_alive("5m"), 5min);
  EXPECT_EQ(parse_keep_alive("1h30m"), 90min);
  EXPECT_EQ(parse_keep_alive("2.5s"), 2500ms);
  EXPECT_EQ(parse_keep_alive("250ms"), 250ms);
  EXPECT_EQ(parse_keep_alive("-5m"), -1ms) << "any negative is forever";
  for (const char* bad : {"", "5x", "m", "1h-", "five", "1e20"}) {
    EXPECT_FALSE(parse_keep_alive(bad).has_value()) << bad;
  }
  EXPECT_EQ(parse_keep_alive_seconds(1.5), 1500ms);
}

TEST(PoolPolicy, APinnedModelIsNeitherExpiredNorScaledDownButMayScaleUp) {
  PoolPolicy policy{2s, 60s, 5min};
  auto m = model("a", {replica(1, 0, 0, 10h), replica(2, 1, 0, 10h)}, 3);
  m.keep_alive = 0ms;
  ASSERT_EQ(plan_pool({m}, T0, policy).expired, (std::vector<std::string>{"a"}));
  m.keep_alive = -1ms;  // kept loaded: its idle second replica would stop
  ASSERT_EQ(plan_pool({m}, T0, policy).scale_down, (std::vector<std::uint64_t>{2}));
  m.pinned = true;
  EXPECT_TRUE(plan_pool({m}, T0, policy).scale_down.empty());
  m.keep_alive = 0ms;
  EXPECT_TRUE(plan_pool({m}, T0, policy).expired.empty());
  m.waiting = 1;
  m.waiting_since = T0 - 10s;
  EXPECT_EQ(plan_pool({m}, T0, policy).scale_up, (std::vector<std::string>{"a"}));
}

TEST(ReloadWhenIdle, OnlyStaleModelsWithNothingInFlightWaitingOrQueuedReload) {
  const std::vector<OptionReloadView> models = {{"idle", true, 0, 0, false},
                                                {"busy", true, 1, 0, false},
                                                {"waited", true, 0, 2, false},
                                                {"queued", true, 0, 0, true},
                                                {"unchanged", false, 0, 0, false}};
  EXPECT_EQ(reload_when_idle(models), (std::vector<std::string>{"idle"}));
  EXPECT_TRUE(reload_when_idle({}).empty());
}

}  // namespace
}  // namespace lemon
