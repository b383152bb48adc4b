// LoadScheduler (issue #28 §3): the order of a load's steps, against a
// recording fake of its effects. No threads, processes or router.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include "lemon/router/load_scheduler.h"

namespace lemon {
namespace {

Status failed_with(ErrorCode code) {
  return Error(code, "failed: " + std::string(error_code_name(code)));
}

// Records each call and answers from a script. A call the script has no
// answer for fails the test.
class RecordingEffects final : public LoadEffects {
 public:
  bool serving = false;
  Status create = ok_status();
  std::deque<Status> starts;                // admit_and_start, then each start_again, in order
  int idle_servers = 0;                     // evict_idle_for_memory succeeds this many times
  bool anything_loaded = true;              // what evict_all reports
  int shut_down_after = -1;                 // shutting_down() turns true after this many calls
  bool evicting_all_failed_before = false;  // what failed_after_evict_all() says
  std::vector<std::string> calls;

  bool serve_loaded() override {
    calls.emplace_back("serve_loaded");
    return serving;
  }
  Status create_server() override {
    calls.emplace_back("create_server");
    return create;
  }
  Status admit_and_start() override {
    calls.emplace_back("admit_and_start");
    return next_start();
  }
  bool evict_idle_for_memory() override {
    calls.emplace_back("evict_idle_for_memory");
    if (idle_servers == 0) {
      return false;
    }
    --idle_servers;
    return true;
  }
  bool evict_all(EvictAllReason reason, const Error& why) override {
    calls.emplace_back(reason == EvictAllReason::kAfterFailedLoad ? "evict_all(failed load)"
                                                                  : "evict_all(out of memory)");
    last_evict_all_cause = why.code();
    return anything_loaded;
  }
  Status start_again() override {
    calls.emplace_back("start_again");
    return next_start();
  }
  Error out_of_memory_everywhere(const Error& last) override {
    calls.emplace_back("out_of_memory_everywhere");
    return Error(ErrorCode::kOutOfMemory, "everywhere: " + last.message());
  }
  bool shutting_down() const override {
    ++shutdown_checks;
    return shut_down_after >= 0 && shutdown_checks > shut_down_after;
  }

  bool failed_after_evict_all() const override { return evicting_all_failed_before; }

  ErrorCode last_evict_all_cause = ErrorCode::kInternal;
  mutable int shutdown_checks = 0;

 private:
  Status next_start() {
    if (starts.empty()) {
      ADD_FAILURE() << "a start the script did not expect";
      return failed_with(ErrorCode::kInternal);
    }
    Status next = starts.front();
    starts.pop_front();
    return next;
  }
};

using Calls = std::vector<std::string>;

TEST(LoadScheduler, ALoadedServerServesTheLoadAndNothingElseHappens) {
  RecordingEffects fx;
  fx.serving = true;
  EXPECT_TRUE(LoadScheduler::run(fx).ok());
  EXPECT_EQ(fx.calls, Calls{"serve_loaded"});
}

TEST(LoadScheduler, AServerThatCannotBeCreatedEvictsNothing) {
  RecordingEffects fx;
  fx.create = failed_with(ErrorCode::kModelFilesMissing);
  auto result = LoadScheduler::run(fx);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kModelFilesMissing);
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server"}));
}

TEST(LoadScheduler, AStartedServerEndsTheLoad) {
  RecordingEffects fx;
  fx.starts = {ok_status()};
  EXPECT_TRUE(LoadScheduler::run(fx).ok());
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server", "admit_and_start"}));
}

TEST(LoadScheduler, AModelTooBigForTheBudgetIsRefusedWithoutARetry) {
  RecordingEffects fx;
  fx.starts = {failed_with(ErrorCode::kInsufficientMemory)};
  auto result = LoadScheduler::run(fx);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kInsufficientMemory);
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server", "admit_and_start"}));
}

TEST(LoadScheduler, ARetryableFailureEvictsEverythingAndStartsOnceMore) {
  RecordingEffects fx;
  fx.starts = {failed_with(ErrorCode::kBackendExited), ok_status()};
  EXPECT_TRUE(LoadScheduler::run(fx).ok());
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server", "admit_and_start",
                             "evict_all(failed load)", "start_again"}));
  EXPECT_EQ(fx.last_evict_all_cause, ErrorCode::kBackendExited);
}

TEST(LoadScheduler, AModelThatFailedAfterAnEvictAllBeforeEvictsNothingAgain) {
  RecordingEffects fx;
  fx.evicting_all_failed_before = true;
  fx.starts = {failed_with(ErrorCode::kBackendExited)};
  auto result = LoadScheduler::run(fx);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kBackendExited);
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server", "admit_and_start"}));
}

TEST(LoadScheduler, OutOfMemoryStillRecoversAfterAnEvictAllFailedBefore) {
  // Memory is the one thing unloading others can change: its recovery stays.
  RecordingEffects fx;
  fx.evicting_all_failed_before = true;
  fx.idle_servers = 1;
  fx.starts = {failed_with(ErrorCode::kOutOfMemory), ok_status()};
  EXPECT_TRUE(LoadScheduler::run(fx).ok());
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server", "admit_and_start",
                             "evict_idle_for_memory", "start_again"}));
}

TEST(LoadScheduler, ASecondFailureIsTheAnswerThereIsNoThirdStart) {
  RecordingEffects fx;
  fx.starts = {failed_with(ErrorCode::kBackendStartTimeout),
               failed_with(ErrorCode::kBackendExited)};
  auto result = LoadScheduler::run(fx);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kBackendExited);
  EXPECT_EQ(fx.calls.back(), "start_again");
  EXPECT_EQ(fx.calls.size(), 5u);
}

TEST(LoadScheduler, AFailureARetryCannotFixIsTheAnswerAtOnce) {
  RecordingEffects fx;
  fx.starts = {failed_with(ErrorCode::kInvalidUserArgs)};
  auto result = LoadScheduler::run(fx);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kInvalidUserArgs);
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server", "admit_and_start"}));
}

TEST(LoadScheduler, OutOfMemoryUnloadsIdleServersOneAtATimeUntilItStarts) {
  RecordingEffects fx;
  fx.idle_servers = 3;
  fx.starts = {failed_with(ErrorCode::kOutOfMemory), failed_with(ErrorCode::kOutOfMemory),
               ok_status()};
  EXPECT_TRUE(LoadScheduler::run(fx).ok());
  EXPECT_EQ(fx.calls,
            (Calls{"serve_loaded", "create_server", "admit_and_start", "evict_idle_for_memory",
                   "start_again", "evict_idle_for_memory", "start_again"}));
  EXPECT_EQ(fx.idle_servers, 1) << "one idle server is left loaded";
}

TEST(LoadScheduler, OutOfMemoryWithNoIdleServerLeftEvictsEverythingForALastStart) {
  RecordingEffects fx;
  fx.idle_servers = 1;
  fx.starts = {failed_with(ErrorCode::kOutOfMemory), failed_with(ErrorCode::kOutOfMemory),
               ok_status()};
  EXPECT_TRUE(LoadScheduler::run(fx).ok());
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server", "admit_and_start",
                             "evict_idle_for_memory", "start_again", "evict_idle_for_memory",
                             "evict_all(out of memory)", "start_again"}));
  EXPECT_EQ(fx.last_evict_all_cause, ErrorCode::kOutOfMemory);
}

TEST(LoadScheduler, OutOfMemoryWithEverythingUnloadedIsA507NamingTheLastFailure) {
  RecordingEffects fx;
  fx.starts = {failed_with(ErrorCode::kOutOfMemory), failed_with(ErrorCode::kOutOfMemory)};
  auto result = LoadScheduler::run(fx);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(result.error().message(), "everywhere: failed: out_of_memory");
  EXPECT_EQ(fx.calls.back(), "out_of_memory_everywhere");

  RecordingEffects alone;  // nothing else was loaded: no pointless last start
  alone.anything_loaded = false;
  alone.starts = {failed_with(ErrorCode::kOutOfMemory)};
  result = LoadScheduler::run(alone);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(alone.calls,
            (Calls{"serve_loaded", "create_server", "admit_and_start", "evict_idle_for_memory",
                   "evict_all(out of memory)", "out_of_memory_everywhere"}));
}

TEST(LoadScheduler, OutOfMemoryThenAnotherFailureEndsTheRecovery) {
  RecordingEffects fx;
  fx.idle_servers = 2;
  fx.starts = {failed_with(ErrorCode::kOutOfMemory), failed_with(ErrorCode::kBackendExited)};
  auto result = LoadScheduler::run(fx);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kBackendExited);
  EXPECT_EQ(fx.idle_servers, 1);
}

TEST(LoadScheduler, AShutdownEndsTheLoadAfterTheStepInProgress) {
  RecordingEffects fx;
  fx.shut_down_after = 0;  // already shutting down when the first start fails
  fx.starts = {failed_with(ErrorCode::kBackendExited)};
  auto result = LoadScheduler::run(fx);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(fx.calls, (Calls{"serve_loaded", "create_server", "admit_and_start"}));

  RecordingEffects recovering;  // shuts down during out-of-memory recovery
  recovering.idle_servers = 5;
  recovering.shut_down_after = 2;
  recovering.starts = {failed_with(ErrorCode::kOutOfMemory), failed_with(ErrorCode::kOutOfMemory)};
  result = LoadScheduler::run(recovering);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(recovering.calls,
            (Calls{"serve_loaded", "create_server", "admit_and_start", "evict_idle_for_memory",
                   "start_again", "out_of_memory_everywhere"}));
}

// ---- which queued load goes first ----------------------------------------------------------

using SteadyTime = std::chrono::steady_clock::time_point;
constexpr std::chrono::milliseconds kStarvation{30000};
const SteadyTime kQueuedAt = SteadyTime{} + std::chrono::hours(1);

QueuedLoad queued(const std::string& model, ModelType type = ModelType::kLlm) {
  return {model, type, true, false, false, kQueuedAt};
}

// One LLM slot, held by `model` with `in_flight` requests.
std::vector<SlotView> one_llm_loaded(const std::string& model, int in_flight) {
  return {{model, ModelType::kLlm, Device::kCpu, in_flight, 1}};
}

TEST(LoadSchedulerQueue, FirstComeFirstServedWhenNothingBusyIsEvicted) {
  const auto next = LoadScheduler::next({queued("a"), queued("b")}, one_llm_loaded("old", 0),
                                        SlotLimits::uniform(1), kStarvation, kQueuedAt);
  EXPECT_EQ(next.index, 0u);
}

TEST(LoadSchedulerQueue, AnEmptyQueueHasNothingToStartAndNoTimeToLookAgain) {
  const auto next = LoadScheduler::next({}, {}, SlotLimits::uniform(1), kStarvation, kQueuedAt);
  EXPECT_FALSE(next.index.has_value());
  EXPECT_EQ(next.look_again, SteadyTime::max());
}

TEST(LoadSchedulerQueue, ALoadNotYetAnnouncedHoldsBackTheOnesBehindIt) {
  QueuedLoad first = queued("a");
  first.announced = false;
  const auto next =
      LoadScheduler::next({first, queued("b")}, {}, SlotLimits::uniform(1), kStarvation, kQueuedAt);
  EXPECT_FALSE(next.index.has_value());
  EXPECT_EQ(next.look_again, SteadyTime::max());
}

TEST(LoadSchedulerQueue, ALoadThatWouldEvictABusyModelWaitsAndALaterOneGoesFirst) {
  // "busy" serves the only LLM slot; "chat" would evict it, the embedding
  // model evicts nothing (types never evict each other).
  const auto table = one_llm_loaded("busy", 2);
  const std::vector<QueuedLoad> queue = {queued("chat"), queued("embed", ModelType::kEmbedding)};
  auto next = LoadScheduler::next(queue, table, SlotLimits::uniform(1), kStarvation,
                                  kQueuedAt + std::chrono::seconds(1));
  EXPECT_EQ(next.index, 1u);

  next = LoadScheduler::next({queued("chat")}, table, SlotLimits::uniform(1), kStarvation,
                             kQueuedAt + std::chrono::seconds(1));
  EXPECT_FALSE(next.index.has_value());
  EXPECT_EQ(next.look_again, kQueuedAt + kStarvation) << "it is looked at again when it starves";

  next = LoadScheduler::next({queued("chat")}, table, SlotLimits::uniform(1), kStarvation,
                             kQueuedAt + kStarvation);
  EXPECT_EQ(next.index, 0u) << "at --max-starvation it goes, and the busy model drains";

  next = LoadScheduler::next({queued("chat")}, one_llm_loaded("busy", 0), SlotLimits::uniform(1),
                             kStarvation, kQueuedAt);
  EXPECT_EQ(next.index, 0u) << "an idle victim holds nothing back";
}

TEST(LoadSchedulerQueue, AnExplicitLoadOrAScaleUpIsNeverHeldBack) {
  const auto table = one_llm_loaded("busy", 3);
  QueuedLoad command = queued("chat");
  command.explicit_load = true;
  EXPECT_EQ(
      LoadScheduler::next({command}, table, SlotLimits::uniform(1), kStarvation, kQueuedAt).index,
      0u);
  QueuedLoad replica = queued("busy");
  replica.replica = true;
  EXPECT_EQ(
      LoadScheduler::next({replica}, table, SlotLimits::uniform(1), kStarvation, kQueuedAt).index,
      0u);
}

TEST(LoadSchedulerQueue, ALoadOutrankedByAHigherPriorityWaitsWithNoDeadline) {
  // "main" (priority 5) holds the only LLM slot, idle; "side" (priority 0)
  // could load only by evicting it.
  std::vector<SlotView> table = one_llm_loaded("main", 0);
  table[0].priority = 5;
  QueuedLoad side = queued("side");
  QueuedLoad command = queued("side-cmd");
  command.explicit_load = true;
  const std::vector<QueuedLoad> queue = {side, command, queued("embed", ModelType::kEmbedding)};
  for (const auto now : {kQueuedAt, kQueuedAt + 10 * kStarvation}) {
    const auto next = LoadScheduler::next(queue, table, SlotLimits::uniform(1), kStarvation, now);
    EXPECT_EQ(next.index, 2u) << "the embedding model goes first";
    EXPECT_EQ(next.outranked, (std::vector<std::size_t>{0, 1}))
        << "automatic and explicit loads wait alike, however long";
    EXPECT_EQ(next.look_again, SteadyTime::max()) << "only a change of the table lets them go";
  }
  // An equal priority goes; so does one that a pin blocks (to fail at once).
  side.priority = 5;
  EXPECT_EQ(
      LoadScheduler::next({side}, table, SlotLimits::uniform(1), kStarvation, kQueuedAt).index, 0u);
  table[0].pinned = true;
  side.priority = 0;
  const auto pinned_next =
      LoadScheduler::next({side}, table, SlotLimits::uniform(1), kStarvation, kQueuedAt);
  EXPECT_EQ(pinned_next.index, 0u);
  EXPECT_TRUE(pinned_next.outranked.empty());
}

}  // namespace
}  // namespace lemon
