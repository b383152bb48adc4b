// The Router's mechanism against in-process fake servers: auto-load, leases,
// busy protection, FIFO loads, coalescing, failure policy, crashes. Threads
// synchronise on router events and fake-server gates, never on sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
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

class RouterTest : public ::testing::Test {
 protected:
  void make_router(const std::string& limits) {
    RouterConfig cfg;
    cfg.limits = *SlotLimits::parse(limits);
    cfg.cli_options = RecipeOptions::defaults();
    cfg.on_event = events.sink();
    router = std::make_unique<Router>(models, factory, cfg);
  }

  std::vector<std::string> loaded_names() const {
    std::vector<std::string> out;
    for (const auto& s : router->loaded()) {
      out.push_back(s.model_name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  int in_flight(const std::string& model) const {
    for (const auto& s : router->loaded()) {
      if (s.model_name == model) {
        return s.in_flight;
      }
    }
    return -1;
  }

  void SetUp() override {
    models.add(fake_model("llm-a"));
    models.add(fake_model("llm-b"));
    models.add(fake_model("llm-c"));
    models.add(fake_model("llm-d"));
    models.add(fake_model("embed", "llamacpp", {"embeddings"}));
    models.add(fake_model("rerank", "llamacpp", {"reranking"}));
    models.add(fake_model("flm-llm", "flm"));
    models.add(fake_model("whisper", "whispercpp", {"audio"}));
    models.add(fake_model("missing", "llamacpp", {}, /*downloaded=*/false));
    models.add(fake_model("odd", "unknown-recipe"));
  }

  FakeResolver models;
  FakeServerFactory factory;
  EventLog events;
  std::unique_ptr<Router> router;
};

TEST_F(RouterTest, AcquireAutoLoadsAndLeaseCountsInFlight) {
  make_router("1");
  {
    auto lease = router->acquire("llm-a");
    ASSERT_TRUE(lease.ok()) << lease.error().message();
    EXPECT_EQ(lease->model_name(), "llm-a");
    EXPECT_EQ(in_flight("llm-a"), 1);
  }
  EXPECT_EQ(in_flight("llm-a"), 0);
  EXPECT_EQ(factory.count("start:llm-a"), 1);
}

TEST_F(RouterTest, ARequestToAServedModelDoesNotLookItsNameUp) {
  make_router("1");
  ASSERT_TRUE(router->acquire("llm-a").ok());
  const int before = models.name_lookups();
  for (int i = 0; i < 3; ++i) {
    auto lease = router->acquire("llm-a");
    ASSERT_TRUE(lease.ok()) << lease.error().message();
  }
  EXPECT_EQ(models.name_lookups(), before) << "the catalogue looks at files on disk";
  ASSERT_TRUE(router->acquire("llm-b").ok());
  EXPECT_GT(models.name_lookups(), before) << "a model not served is looked up";
}

TEST_F(RouterTest, InFlightIsAnExactCountNotAFlag) {
  make_router("1");
  auto first = router->acquire("llm-a");
  auto second = router->acquire("llm-a");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(in_flight("llm-a"), 2);
  first->release();
  EXPECT_EQ(in_flight("llm-a"), 1);  // a bool would say "idle" here (Lemonade §8 #1)
  second->release();
  EXPECT_EQ(in_flight("llm-a"), 0);
}

TEST_F(RouterTest, LeastRecentlyUsedOfTheTypeIsEvicted) {
  make_router("2");
  ASSERT_TRUE(router->acquire("llm-a").ok());
  ASSERT_TRUE(router->acquire("llm-b").ok());
  ASSERT_TRUE(router->acquire("llm-a").ok());  // a is now more recent than b
  ASSERT_TRUE(router->acquire("embed").ok());  // other type: evicts nothing
  ASSERT_TRUE(router->acquire("llm-c").ok());
  EXPECT_EQ(loaded_names(), (std::vector<std::string>{"embed", "llm-a", "llm-c"}));
  EXPECT_EQ(factory.count("stop:llm-b"), 1);
  EXPECT_EQ(factory.count("stop:llm-a"), 0);
}

TEST_F(RouterTest, UnlimitedKeepsEverything) {
  make_router("-1");
  for (const char* m : {"llm-a", "llm-b", "llm-c", "llm-d"}) {
    ASSERT_TRUE(router->acquire(m).ok());
  }
  EXPECT_EQ(loaded_names().size(), 4u);
  EXPECT_EQ(factory.count("stop:llm-a"), 0);
}

TEST_F(RouterTest, ListFormLimitsEachTypeSeparately) {
  make_router("2 1");
  for (const char* m : {"llm-a", "llm-b", "embed", "rerank"}) {
    ASSERT_TRUE(router->acquire(m).ok());
  }
  EXPECT_EQ(loaded_names(), (std::vector<std::string>{"embed", "llm-a", "llm-b", "rerank"}));
  ASSERT_TRUE(router->acquire("llm-c").ok());
  EXPECT_EQ(factory.count("stop:llm-a"), 1);
}

TEST_F(RouterTest, NpuLoadEvictsNpuServerOfAnotherType) {
  make_router("-1");
  RecipeOptions npu = *RecipeOptions::from_json("whispercpp", {{"whispercpp_backend", "npu"}});
  ASSERT_TRUE(router->acquire("flm-llm").ok());
  ASSERT_TRUE(router->acquire("llm-a").ok());
  ASSERT_TRUE(router->load("whisper", npu).ok());
  EXPECT_EQ(loaded_names(), (std::vector<std::string>{"llm-a", "whisper"}));
  EXPECT_EQ(factory.count("stop:flm-llm"), 1);
  EXPECT_EQ(factory.count("stop:llm-a"), 0);
}

TEST_F(RouterTest, BusyServerSurvivesALoadThatWantsItsSlotUntilItsRequestEnds) {
  make_router("1");
  auto lease = router->acquire("llm-a");
  ASSERT_TRUE(lease.ok());
  auto other = std::async(std::launch::async, [&] { return router->acquire("llm-b").ok(); });
  events.wait_for(Kind::kDrainWaiting, "llm-a");
  // The load waits with the router lock released: queries still answer, and
  // the busy server is neither stopped nor leasable.
  EXPECT_EQ(factory.count("stop:llm-a"), 0);
  auto during = router->loaded();
  ASSERT_EQ(during.size(), 1u);
  EXPECT_TRUE(during[0].draining);
  EXPECT_EQ(during[0].in_flight, 1);
  EXPECT_EQ(factory.count("start:llm-b"), 0);
  lease->release();
  EXPECT_TRUE(other.get());
  EXPECT_EQ(factory.count("stop:llm-a"), 1);
  EXPECT_EQ(loaded_names(), std::vector<std::string>{"llm-b"});
}

TEST_F(RouterTest, LoadsLeaveTheQueueInFifoOrderAndDecideOnDequeue) {
  make_router("1");
  auto gate = factory.gate("llm-a");
  std::vector<std::future<bool>> waits;
  waits.push_back(std::async(std::launch::async, [&] { return router->acquire("llm-a").ok(); }));
  factory.wait_for("start:llm-a");
  // While llm-a is still starting (nothing is loaded yet), queue three more.
  for (const char* m : {"llm-b", "llm-c", "llm-d"}) {
    waits.push_back(std::async(std::launch::async, [&, m] { return router->acquire(m).ok(); }));
    events.wait_for(Kind::kLoadQueued, m);
  }
  gate->open();
  for (auto& w : waits) {
    EXPECT_TRUE(w.get());
  }
  std::vector<std::string> starts;
  for (const auto& e : factory.log()) {
    if (e.rfind("start:", 0) == 0) {
      starts.push_back(e);
    }
  }
  EXPECT_EQ(starts,
            (std::vector<std::string>{"start:llm-a", "start:llm-b", "start:llm-c", "start:llm-d"}));
  // When llm-b was queued the llm slot was free; the eviction of llm-a was
  // decided only when llm-b left the queue.
  EXPECT_EQ(factory.count("stop:llm-a"), 1);
  EXPECT_EQ(factory.count("stop:llm-b"), 1);
  EXPECT_EQ(factory.count("stop:llm-c"), 1);
  EXPECT_EQ(loaded_names(), std::vector<std::string>{"llm-d"});
}

TEST_F(RouterTest, ConcurrentRequestsForOneModelShareOneLoad) {
  make_router("1");
  auto gate = factory.gate("llm-a");
  constexpr int kClients = 10;
  std::vector<std::future<Result<Lease>>> leases;
  for (int i = 0; i < kClients; ++i) {
    leases.push_back(std::async(std::launch::async, [&] { return router->acquire("llm-a"); }));
  }
  events.wait_for(Kind::kLoadQueued, "llm-a");
  events.wait_for(Kind::kLoadJoined, "llm-a", kClients - 1);
  gate->open();
  std::vector<Result<Lease>> held;
  for (auto& f : leases) {
    held.push_back(f.get());
    ASSERT_TRUE(held.back().ok());
  }
  EXPECT_EQ(factory.count("start:llm-a"), 1);
  EXPECT_EQ(in_flight("llm-a"), kClients);  // every lease granted at publication
}

TEST_F(RouterTest, AnExplicitLoadJoiningARunningLoadGetsTheWholeFailurePolicy) {
  // llm-a failed even with everything evicted: automatic loads of it evict
  // nothing now. POST /load asks for the whole policy again, also when it
  // joins an automatic load already running.
  make_router("2");
  factory.script("llm-a", {.fail_starts = 2, .fail_code = ErrorCode::kBackendExited});
  ASSERT_FALSE(router->acquire("llm-a").ok());
  ASSERT_EQ(events.count(Kind::kRetryingAfterEvictAll, "llm-a"), 1);
  auto gate = std::make_shared<testing::Gate>();
  factory.script("llm-a", {.fail_starts = 1, .fail_code = ErrorCode::kBackendExited, .gate = gate});
  auto automatic = std::async(std::launch::async, [&] { return router->acquire("llm-a"); });
  factory.wait_for("start:llm-a", 3);  // the automatic load's start, held at the gate
  auto explicit_load =
      std::async(std::launch::async, [&] { return router->load("llm-a", RecipeOptions{}); });
  events.wait_for(Kind::kLoadJoined, "llm-a");
  gate->open();
  EXPECT_TRUE(explicit_load.get().ok()) << "its failure evicted all and the retry started";
  EXPECT_TRUE(automatic.get().ok());
  EXPECT_EQ(events.count(Kind::kRetryingAfterEvictAll, "llm-a"), 2);
}

TEST_F(RouterTest, FailedLoadEvictsEverythingAndRetriesOnce) {
  make_router("2");
  ASSERT_TRUE(router->acquire("llm-a").ok());
  ASSERT_TRUE(router->acquire("embed").ok());
  factory.script("llm-b", {.fail_starts = 1, .fail_code = ErrorCode::kBackendExited});
  auto lease = router->acquire("llm-b");
  ASSERT_TRUE(lease.ok()) << lease.error().message();
  EXPECT_EQ(events.count(Kind::kRetryingAfterEvictAll, "llm-b"), 1);
  EXPECT_EQ(factory.count("stop:llm-a"), 1);
  EXPECT_EQ(factory.count("stop:embed"), 1);
  EXPECT_EQ(factory.count("start:llm-b"), 2);
  EXPECT_EQ(loaded_names(), std::vector<std::string>{"llm-b"});
}

TEST_F(RouterTest, SecondFailureIsReportedWithItsType) {
  make_router("1");
  factory.script("llm-b", {.fail_starts = 2, .fail_code = ErrorCode::kBackendStartTimeout});
  auto lease = router->acquire("llm-b");
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.error().code(), ErrorCode::kBackendStartTimeout);
  EXPECT_EQ(factory.count("start:llm-b"), 2);
  EXPECT_TRUE(loaded_names().empty());
}

TEST_F(RouterTest, MissingFilesBadArgumentsUnknownRecipeEvictNothing) {
  make_router("1");
  ASSERT_TRUE(router->acquire("llm-a").ok());

  auto missing = router->acquire("missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kModelFilesMissing);
  EXPECT_NE(missing.error().message().find("/fake/missing.gguf"), std::string::npos);

  factory.script("llm-b", {.prepare_error = ErrorCode::kInvalidUserArgs});
  auto bad_args = router->acquire("llm-b");
  ASSERT_FALSE(bad_args.ok());
  EXPECT_EQ(bad_args.error().code(), ErrorCode::kInvalidUserArgs);

  factory.script("llm-c", {.prepare_error = ErrorCode::kBackendBinaryMissing});
  EXPECT_EQ(router->acquire("llm-c").error().code(), ErrorCode::kBackendBinaryMissing);

  EXPECT_EQ(router->acquire("odd").error().code(), ErrorCode::kUnknownRecipe);
  EXPECT_EQ(router->acquire("nope").error().code(), ErrorCode::kModelNotFound);

  EXPECT_EQ(loaded_names(), std::vector<std::string>{"llm-a"});
  EXPECT_EQ(factory.count("stop:llm-a"), 0);
  EXPECT_EQ(events.count(Kind::kRetryingAfterEvictAll, "llm-b"), 0);
}

TEST_F(RouterTest, CrashedServerLeavesTheTableAndReloadsOnNextRequest) {
  make_router("1");
  ASSERT_TRUE(router->acquire("llm-a").ok());
  factory.live("llm-a")->crash();
  events.wait_for(Kind::kServerCrashed, "llm-a");
  EXPECT_TRUE(loaded_names().empty());
  ASSERT_TRUE(router->acquire("llm-a").ok());
  EXPECT_EQ(factory.count("start:llm-a"), 2);
}

TEST_F(RouterTest, CancelledWaiterGivesUpButTheLoadCompletes) {
  make_router("1");
  auto gate = factory.gate("llm-a");
  std::atomic<bool> gone{false};
  WaitHooks hooks;
  hooks.tick_interval = std::chrono::milliseconds(5);
  hooks.cancelled = [&] { return gone.load(); };
  auto waiting = std::async(std::launch::async, [&] { return router->acquire("llm-a", hooks); });
  factory.wait_for("start:llm-a");
  gone = true;
  auto result = waiting.get();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kCancelled);
  gate->open();
  events.wait_for(Kind::kLoadSucceeded, "llm-a");
  EXPECT_EQ(in_flight("llm-a"), 0);  // no lease was granted to the departed waiter
}

TEST_F(RouterTest, ExplicitLoadWithSameOptionsIsANoOpAndDifferentOptionsReload) {
  make_router("1");
  RecipeOptions small = *RecipeOptions::from_json("llamacpp", {{"ctx_size", 2048}});
  RecipeOptions big = *RecipeOptions::from_json("llamacpp", {{"ctx_size", 8192}});
  ASSERT_TRUE(router->load("llm-a", small).ok());
  ASSERT_TRUE(router->load("llm-a", small).ok());
  EXPECT_EQ(factory.count("start:llm-a"), 1);
  ASSERT_TRUE(router->load("llm-a", big).ok());
  EXPECT_EQ(factory.count("start:llm-a"), 2);
  EXPECT_EQ(factory.count("stop:llm-a"), 1);
  auto loaded = router->loaded();
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].recipe_options["ctx_size"], 8192);
  // An auto-load request accepts whatever options the loaded server has.
  ASSERT_TRUE(router->acquire("llm-a").ok());
  EXPECT_EQ(factory.count("start:llm-a"), 2);
}

TEST_F(RouterTest, UnloadOfAModelThatIsNotLoadedIsNotLoaded) {
  make_router("1");
  auto s = router->unload("llm-a");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kModelNotLoaded);
}

TEST_F(RouterTest, UnloadWaitsForTheServerToDrain) {
  make_router("1");
  auto lease = router->acquire("llm-a");
  ASSERT_TRUE(lease.ok());
  auto unloading = std::async(std::launch::async, [&] { return router->unload("llm-a").ok(); });
  events.wait_for(Kind::kDrainWaiting, "llm-a");
  EXPECT_EQ(factory.count("stop:llm-a"), 0);
  lease->release();
  EXPECT_TRUE(unloading.get());
  EXPECT_EQ(factory.count("stop:llm-a"), 1);
  EXPECT_TRUE(loaded_names().empty());
}

TEST_F(RouterTest, UnloadAllStopsEveryType) {
  make_router("1");
  ASSERT_TRUE(router->acquire("llm-a").ok());
  ASSERT_TRUE(router->acquire("embed").ok());
  ASSERT_TRUE(router->acquire("rerank").ok());
  router->unload_all();
  EXPECT_TRUE(loaded_names().empty());
}

TEST_F(RouterTest, MostRecentlyLoadedIsReported) {
  make_router("-1");
  ASSERT_TRUE(router->acquire("llm-a").ok());
  ASSERT_TRUE(router->acquire("embed").ok());
  ASSERT_TRUE(router->acquire("llm-a").ok());  // used, not loaded: does not change it
  auto latest = router->most_recently_loaded();
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->model_name, "embed");
}

// Lemonade #1836: two clients alternate two models with one LLM slot. Every
// auto-loaded server must serve the request that loaded it before it can be
// evicted, so no request ever fails.
TEST_F(RouterTest, TwoClientsHammeringTwoModelsWithOneSlotNeverFail) {
  make_router("1");
  constexpr int kIterations = 1000;
  std::atomic<int> failures{0};
  auto client = [&](const char* model) {
    for (int i = 0; i < kIterations; ++i) {
      auto lease = router->acquire(model);
      if (!lease.ok() || lease->model_name() != model || lease->server().exited()) {
        ++failures;
      }
    }
  };
  std::thread a(client, "llm-a");
  std::thread b(client, "llm-b");
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  auto loaded = router->loaded();
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].in_flight, 0);
}

TEST_F(RouterTest, ShutdownFailsQueuedLoadsAndStopsServers) {
  make_router("1");
  ASSERT_TRUE(router->acquire("llm-a").ok());
  router->shutdown();
  EXPECT_EQ(factory.count("stop:llm-a"), 1);
  auto after = router->acquire("llm-b");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code(), ErrorCode::kShuttingDown);
}

}  // namespace
}  // namespace lemon
