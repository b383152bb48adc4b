// Request slots, the bounded line and the load cooldown in the Router
// (issue #11 §6), against in-process fake servers. Threads synchronise on
// router events and leases, never on sleeps.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include "lemon/router/router.h"
#include "support/fake_server_factory.h"

namespace lemon {
namespace {

using testing::EventLog;
using testing::fake_model;
using testing::FakeResolver;
using testing::FakeServerFactory;
using Kind = RouterEvent::Kind;

class RouterSlotsTest : public ::testing::Test {
 protected:
  void make_router(const std::string& limits, int max_per_model = 256, int max_total = 1024) {
    RouterConfig cfg;
    cfg.limits = *SlotLimits::parse(limits);
    cfg.cli_options = RecipeOptions::defaults();
    cfg.max_queued_per_model = max_per_model;
    cfg.max_queued_total = max_total;
    cfg.max_replicas = max_replicas;
    cfg.on_event = events.sink();
    router = std::make_unique<Router>(models, factory, cfg);
  }

  LoadedServerInfo info(const std::string& model) const {
    for (const auto& s : router->loaded()) {
      if (s.model_name == model) {
        return s;
      }
    }
    ADD_FAILURE() << model << " is not loaded";
    return {};
  }

  // Starts acquire(model) on another thread and returns once it waits in the
  // model's line (the n-th waiting_for_slot event).
  std::future<Result<Lease>> acquire_waiting(const std::string& model, int nth,
                                             const WaitHooks& hooks = {}) {
    auto f = std::async(std::launch::async,
                        [this, model, hooks] { return router->acquire(model, hooks); });
    events.wait_for(Kind::kWaitingForSlot, model, nth);
    return f;
  }

  // With every lease `model` allows out (`leased` of them), one more
  // request waits in the line and takes the lease `freed` gives back.
  void expect_next_waits_for(Lease& freed, const std::string& model, int slots, int leased) {
    auto next = acquire_waiting(model, 1);
    LoadedServerInfo i = info(model);
    EXPECT_EQ(i.slots, slots);
    EXPECT_EQ(i.in_flight, leased);
    EXPECT_EQ(i.waiting, 1);
    freed.release();
    auto got = next.get();
    ASSERT_TRUE(got.ok()) << got.error().message();
    EXPECT_EQ(info(model).in_flight, leased);
    EXPECT_EQ(info(model).waiting, 0);
  }

  void SetUp() override {
    models.add(fake_model("llm-a"));
    models.add(fake_model("llm-b"));
  }

  FakeResolver models;
  FakeServerFactory factory;
  EventLog events;
  int max_replicas = 1;
  std::unique_ptr<Router> router;
};

TEST_F(RouterSlotsTest, ABackendThatQueuesItselfGetsOneMoreThanItsSlots) {
  // llama-server queues a request that finds every slot busy: one more goes
  // there, so it starts the moment a slot frees (issue #27).
  factory.script("llm-a", {.slots = 1, .queued_ahead = 1});
  make_router("1");
  WaitHooks never_wait;
  never_wait.cancelled = [] { return true; };
  auto a = router->acquire("llm-a");
  auto b = router->acquire("llm-a", never_wait);
  ASSERT_TRUE(a.ok() && b.ok());
  expect_next_waits_for(*a, "llm-a", 1, 2);
}

TEST_F(RouterSlotsTest, NothingGoesAheadWhenTheModelMayGainReplicas) {
  // A request queued inside one replica would not move to a new idle one.
  factory.script("llm-a", {.slots = 1, .queued_ahead = 1});
  max_replicas = 2;
  make_router("1");
  auto a = router->acquire("llm-a");
  ASSERT_TRUE(a.ok());
  auto second = acquire_waiting("llm-a", 1);
  EXPECT_EQ(info("llm-a").in_flight, 1);
  a->release();
  ASSERT_TRUE(second.get().ok());
}

TEST_F(RouterSlotsTest, NoMoreLeasesThanSlotsTheRestWaitAndGetOneWhenFreed) {
  factory.script("llm-a", {.slots = 2});
  make_router("1");
  auto a = router->acquire("llm-a");
  auto b = router->acquire("llm-a");
  ASSERT_TRUE(a.ok() && b.ok());
  expect_next_waits_for(*a, "llm-a", 2, 2);
}

TEST_F(RouterSlotsTest, WaitersAreServedInArrivalOrder) {
  factory.script("llm-a", {.slots = 1});
  make_router("1");
  auto holder = router->acquire("llm-a");
  ASSERT_TRUE(holder.ok());
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::future<void>> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.push_back(std::async(std::launch::async, [&, i] {
      auto lease = router->acquire("llm-a");
      ASSERT_TRUE(lease.ok());
      std::lock_guard lock(mu);
      order.push_back(i);
    }));  // each lease ends at once, freeing the slot for the next
    events.wait_for(Kind::kWaitingForSlot, "llm-a", i + 1);
  }
  holder->release();
  for (auto& w : waiters) {
    w.get();
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST_F(RouterSlotsTest, RequestsThatWaitedForTheLoadGetSlotsThenTheLine) {
  factory.script("llm-a", {.slots = 1});
  auto gate = factory.gate("llm-a");
  make_router("1");
  auto first = std::async(std::launch::async, [&] { return router->acquire("llm-a"); });
  events.wait_for(Kind::kLoadQueued, "llm-a");
  auto second = std::async(std::launch::async, [&] { return router->acquire("llm-a"); });
  events.wait_for(Kind::kLoadJoined, "llm-a");
  gate->open();
  auto lease = first.get();
  ASSERT_TRUE(lease.ok());
  events.wait_for(Kind::kWaitingForSlot, "llm-a");
  EXPECT_EQ(info("llm-a").in_flight, 1) << "only one lease was granted with the load";
  EXPECT_EQ(info("llm-a").waiting, 1);
  lease->release();
  ASSERT_TRUE(second.get().ok());
}

TEST_F(RouterSlotsTest, AWaiterWhoLeavesGivesUpItsPlace) {
  factory.script("llm-a", {.slots = 1});
  make_router("1");
  auto holder = router->acquire("llm-a");
  ASSERT_TRUE(holder.ok());
  std::atomic<bool> gone{false};
  WaitHooks hooks;
  hooks.cancelled = [&] { return gone.load(); };
  hooks.tick_interval = std::chrono::milliseconds(5);
  auto leaving = acquire_waiting("llm-a", 1, hooks);
  auto staying = acquire_waiting("llm-a", 2);
  gone = true;
  auto r = leaving.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCancelled);
  EXPECT_EQ(info("llm-a").waiting, 1);
  holder->release();
  EXPECT_TRUE(staying.get().ok()) << "the one behind is served";
}

TEST_F(RouterSlotsTest, TheLineIsBoundedPerModelAndInAll) {
  factory.script("llm-a", {.slots = 1});
  factory.script("llm-b", {.slots = 1});
  make_router("2", /*max_per_model=*/2, /*max_total=*/3);
  auto a = router->acquire("llm-a");
  auto b = router->acquire("llm-b");
  ASSERT_TRUE(a.ok() && b.ok());
  auto w1 = acquire_waiting("llm-a", 1);
  auto w2 = acquire_waiting("llm-a", 2);
  auto full = router->acquire("llm-a");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code(), ErrorCode::kQueueFull);
  EXPECT_EQ(full.error().retry_after(), 1);
  EXPECT_NE(full.error().message().find("--max-queued-requests"), std::string::npos);

  auto w3 = acquire_waiting("llm-b", 1);
  auto all_full = router->acquire("llm-b");
  ASSERT_FALSE(all_full.ok());
  EXPECT_EQ(all_full.error().code(), ErrorCode::kQueueFull);
  EXPECT_NE(all_full.error().message().find("--max-queued-requests-total"), std::string::npos);

  a->release();
  b->release();
  for (auto* w : {&w1, &w2, &w3}) {
    EXPECT_TRUE(w->get().ok());
  }
  EXPECT_TRUE(router->acquire("llm-a").ok()) << "places are given back";
}

TEST_F(RouterSlotsTest, AWaiterStartsOverWhenItsServerIsUnloaded) {
  factory.script("llm-a", {.slots = 1});
  make_router("1");
  auto holder = router->acquire("llm-a");
  ASSERT_TRUE(holder.ok());
  auto waiter = acquire_waiting("llm-a", 1);
  auto unloading = std::async(std::launch::async, [&] { return router->unload("llm-a"); });
  events.wait_for(Kind::kDrainWaiting, "llm-a");
  holder->release();
  ASSERT_TRUE(unloading.get().ok());
  auto lease = waiter.get();
  ASSERT_TRUE(lease.ok()) << lease.error().message();
  EXPECT_EQ(factory.count("start:llm-a"), 2) << "it loaded the model again";
}

TEST_F(RouterSlotsTest, TwoFailedLoadsInARowRestTheModelUntilAnExplicitLoad) {
  make_router("1");
  // The first acquire tries twice (evict-all-then-retry); the second once,
  // as the first failed with everything evicted: 3 starts in all.
  factory.script("llm-a", {.fail_starts = 100, .fail_code = ErrorCode::kBackendExited});
  for (int i = 0; i < 2; ++i) {
    auto r = router->acquire("llm-a");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kBackendExited);
  }
  EXPECT_EQ(factory.count("start:llm-a"), 3);
  auto resting = router->acquire("llm-a");
  ASSERT_FALSE(resting.ok());
  EXPECT_EQ(resting.error().code(), ErrorCode::kBackendExited) << "the last load error";
  ASSERT_TRUE(resting.error().retry_after().has_value());
  EXPECT_LE(*resting.error().retry_after(), 5);
  EXPECT_GE(*resting.error().retry_after(), 4);
  EXPECT_EQ(factory.count("start:llm-a"), 3) << "nothing was started while it rests";
  EXPECT_TRUE(router->acquire("llm-b").ok()) << "other models load as usual";

  auto loaded = router->load("llm-a", RecipeOptions{});
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(factory.count("start:llm-a"), 5) << "an explicit load tries at once, twice";
  EXPECT_FALSE(loaded.error().retry_after()) << "and counts from zero again";
  ASSERT_FALSE(router->acquire("llm-a").ok());
  EXPECT_EQ(factory.count("start:llm-a"), 6);
  auto rests_again = router->acquire("llm-a");
  ASSERT_FALSE(rests_again.ok());
  EXPECT_EQ(factory.count("start:llm-a"), 6);
  EXPECT_TRUE(rests_again.error().retry_after().has_value());
}

TEST_F(RouterSlotsTest, ASuccessfulLoadForgetsEarlierFailures) {
  make_router("1");
  factory.script("llm-a", {.fail_starts = 2, .fail_code = ErrorCode::kBackendExited});
  ASSERT_FALSE(router->acquire("llm-a").ok());  // two starts, one failed load
  ASSERT_TRUE(router->acquire("llm-a").ok());   // succeeds: no rest, counting restarts
  ASSERT_TRUE(router->unload("llm-a").ok());
  factory.script("llm-a", {.fail_starts = 2, .fail_code = ErrorCode::kBackendExited});
  ASSERT_FALSE(router->acquire("llm-a").ok());
  auto again = router->acquire("llm-a");
  EXPECT_TRUE(again.ok()) << "one failure since the success: no rest";
}

}  // namespace
}  // namespace lemon
