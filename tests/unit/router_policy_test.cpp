// The router's pure decisions (seed 000 rules), tested without threads,
// processes or clocks.
#include <gtest/gtest.h>

#include "lemon/router/eviction_policy.h"
#include "lemon/router/slot_limits.h"

namespace lemon {
namespace {

SlotView slot(const std::string& model, ModelType type, std::uint64_t last_use, int in_flight = 0,
              Device device = Device::kGpu) {
  return SlotView{model, type, device, in_flight, last_use};
}

std::vector<std::string> victims(const std::vector<Eviction>& plan) {
  std::vector<std::string> out;
  for (const auto& e : plan) {
    out.push_back(e.model);
  }
  return out;
}

TEST(EvictionPolicy, FreeSlotEvictsNothing) {
  std::vector<SlotView> slots = {slot("a", ModelType::kLlm, 1)};
  auto plan = plan_eviction(slots, {"b", ModelType::kLlm, Device::kGpu}, SlotLimits::uniform(2));
  EXPECT_TRUE(plan.empty());
}

TEST(EvictionPolicy, FullTypeEvictsLeastRecentlyUsedOfThatType) {
  std::vector<SlotView> slots = {slot("old", ModelType::kLlm, 1), slot("new", ModelType::kLlm, 5),
                                 slot("emb", ModelType::kEmbedding, 0)};
  auto plan = plan_eviction(slots, {"c", ModelType::kLlm, Device::kGpu}, SlotLimits::uniform(2));
  ASSERT_EQ(victims(plan), std::vector<std::string>{"old"});
  EXPECT_EQ(plan[0].reason, EvictionReason::kSlotLimit);
}

TEST(EvictionPolicy, TypesAreIndependent) {
  std::vector<SlotView> slots = {slot("llm", ModelType::kLlm, 1),
                                 slot("rerank", ModelType::kReranking, 2)};
  for (ModelType t : {ModelType::kEmbedding, ModelType::kAudio, ModelType::kImage}) {
    EXPECT_TRUE(plan_eviction(slots, {"x", t, Device::kCpu}, SlotLimits::uniform(1)).empty())
        << model_type_name(t);
  }
  auto plan =
      plan_eviction(slots, {"r2", ModelType::kReranking, Device::kGpu}, SlotLimits::uniform(1));
  EXPECT_EQ(victims(plan), std::vector<std::string>{"rerank"});
}

TEST(EvictionPolicy, UnlimitedNeverEvictsForCount) {
  std::vector<SlotView> slots;
  for (int i = 0; i < 50; ++i) {
    slots.push_back(slot("m" + std::to_string(i), ModelType::kLlm, static_cast<std::uint64_t>(i)));
  }
  auto plan = plan_eviction(slots, {"new", ModelType::kLlm, Device::kGpu},
                            SlotLimits::uniform(SlotLimits::kUnlimited));
  EXPECT_TRUE(plan.empty());
}

TEST(EvictionPolicy, IdleServerIsChosenBeforeBusyOne) {
  std::vector<SlotView> slots = {slot("busy-old", ModelType::kLlm, 1, /*in_flight=*/2),
                                 slot("idle-new", ModelType::kLlm, 9)};
  auto plan = plan_eviction(slots, {"c", ModelType::kLlm, Device::kGpu}, SlotLimits::uniform(2));
  EXPECT_EQ(victims(plan), std::vector<std::string>{"idle-new"});
}

TEST(EvictionPolicy, AllBusyStillChoosesLeastRecentlyUsed) {
  std::vector<SlotView> slots = {slot("b", ModelType::kLlm, 7, 1),
                                 slot("a", ModelType::kLlm, 3, 1)};
  auto plan = plan_eviction(slots, {"c", ModelType::kLlm, Device::kGpu}, SlotLimits::uniform(2));
  EXPECT_EQ(victims(plan), std::vector<std::string>{"a"});
}

TEST(EvictionPolicy, LowerLimitEvictsSeveral) {
  // A limit can be lower than what is loaded only transiently, but the plan
  // must still bring the type under it.
  std::vector<SlotView> slots = {slot("a", ModelType::kLlm, 1), slot("b", ModelType::kLlm, 2),
                                 slot("c", ModelType::kLlm, 3)};
  auto plan = plan_eviction(slots, {"d", ModelType::kLlm, Device::kGpu}, SlotLimits::uniform(2));
  EXPECT_EQ(victims(plan), (std::vector<std::string>{"a", "b"}));
}

TEST(EvictionPolicy, NpuLoadEvictsEveryNpuServerAcrossTypes) {
  std::vector<SlotView> slots = {
      slot("flm-llm", ModelType::kLlm, 5, 0, Device::kNpu),
      slot("whisper-npu", ModelType::kAudio, 6, 0, Device::kNpu),
      slot("hybrid", ModelType::kEmbedding, 7, 0, Device::kGpu | Device::kNpu),
      slot("gpu-llm", ModelType::kLlm, 1, 0, Device::kGpu)};
  // Unlimited slots: only NPU exclusivity applies.
  auto plan = plan_eviction(slots, {"ryzen", ModelType::kLlm, Device::kNpu},
                            SlotLimits::uniform(SlotLimits::kUnlimited));
  EXPECT_EQ(victims(plan), (std::vector<std::string>{"flm-llm", "hybrid", "whisper-npu"}));
  for (const auto& e : plan) {
    EXPECT_EQ(e.reason, EvictionReason::kNpuExclusive);
  }
}

TEST(EvictionPolicy, NpuVictimAlsoFreesItsTypeSlot) {
  std::vector<SlotView> slots = {slot("flm", ModelType::kLlm, 9, 0, Device::kNpu),
                                 slot("gpu", ModelType::kLlm, 1, 0, Device::kGpu)};
  auto plan = plan_eviction(slots, {"npu2", ModelType::kLlm, Device::kNpu}, SlotLimits::uniform(2));
  // Evicting the NPU server leaves one LLM, under the limit of 2.
  EXPECT_EQ(victims(plan), std::vector<std::string>{"flm"});
}

TEST(EvictionPolicy, GpuLoadIgnoresNpuServersOfOtherTypes) {
  std::vector<SlotView> slots = {slot("flm", ModelType::kLlm, 1, 0, Device::kNpu)};
  auto plan =
      plan_eviction(slots, {"emb", ModelType::kEmbedding, Device::kGpu}, SlotLimits::uniform(1));
  EXPECT_TRUE(plan.empty());
}

TEST(EvictionPolicy, ReloadEvictsTheOldServerOfTheSameModel) {
  std::vector<SlotView> slots = {slot("m", ModelType::kLlm, 1), slot("other", ModelType::kLlm, 2)};
  auto plan = plan_eviction(slots, {"m", ModelType::kLlm, Device::kGpu}, SlotLimits::uniform(2));
  ASSERT_EQ(victims(plan), std::vector<std::string>{"m"});
  EXPECT_EQ(plan[0].reason, EvictionReason::kReload);
}

TEST(EvictionPolicy, TiesAreBrokenByName) {
  std::vector<SlotView> slots = {slot("b", ModelType::kLlm, 4), slot("a", ModelType::kLlm, 4)};
  EXPECT_EQ(choose_lru_victim(slots, ModelType::kLlm, {}), "a");
  EXPECT_EQ(choose_lru_victim(slots, ModelType::kLlm, {"a"}), "b");
  EXPECT_EQ(choose_lru_victim(slots, ModelType::kAudio, {}), "");
}

TEST(FailurePolicy, OnlyRetryableFailuresEvictAllAndOnlyOnce) {
  for (ErrorCode c :
       {ErrorCode::kBackendExited, ErrorCode::kBackendStartTimeout, ErrorCode::kSpawnFailed}) {
    EXPECT_EQ(on_load_failure(c, 1, false), FailureAction::kEvictAllAndRetry) << error_code_name(c);
    EXPECT_EQ(on_load_failure(c, 2, false), FailureAction::kFail) << error_code_name(c);
    // The model's last load failed even with everything evicted: not again.
    EXPECT_EQ(on_load_failure(c, 1, true), FailureAction::kFail) << error_code_name(c);
  }
  for (ErrorCode c :
       {ErrorCode::kModelFilesMissing, ErrorCode::kInvalidUserArgs, ErrorCode::kUnknownRecipe,
        ErrorCode::kBackendBinaryMissing, ErrorCode::kInvalidOption, ErrorCode::kCancelled}) {
    EXPECT_EQ(on_load_failure(c, 1, false), FailureAction::kFail) << error_code_name(c);
  }
}

TEST(SlotLimits, SingleValueAppliesToEveryType) {
  auto l = SlotLimits::parse("3");
  ASSERT_TRUE(l.ok());
  for (ModelType t : kAllModelTypes) {
    EXPECT_EQ(l->limit(t), 3);
  }
}

TEST(SlotLimits, MinusOneIsUnlimited) {
  auto l = SlotLimits::parse("-1");
  ASSERT_TRUE(l.ok());
  for (ModelType t : kAllModelTypes) {
    EXPECT_TRUE(l->unlimited(t));
  }
}

TEST(SlotLimits, ListFormIsPaddedWithOne) {
  auto l = SlotLimits::parse("5 2");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->limit(ModelType::kLlm), 5);
  EXPECT_EQ(l->limit(ModelType::kEmbedding), 2);
  EXPECT_EQ(l->limit(ModelType::kReranking), 1);
  EXPECT_EQ(l->limit(ModelType::kAudio), 1);
  EXPECT_EQ(l->limit(ModelType::kImage), 1);
  auto full = SlotLimits::parse("4,3,2,-1,6");
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->unlimited(ModelType::kAudio));
  EXPECT_EQ(full->limit(ModelType::kImage), 6);
}

TEST(SlotLimits, RejectsZeroBelowMinusOneGarbageAndTooMany) {
  for (const char* bad : {"0", "-2", "abc", "1 2 3 4 5 6", "", "2 0"}) {
    auto l = SlotLimits::parse(bad);
    EXPECT_FALSE(l.ok()) << bad;
    if (!l.ok()) {
      EXPECT_EQ(l.error().code(), ErrorCode::kInvalidOption);
    }
  }
}

// ---- pins (issue #29 §3) ----------------------------------------------------

SlotView pinned(SlotView s) {
  s.pinned = true;
  return s;
}

TEST(EvictionPolicy, APinnedServerIsPassedOverForTheNextLeastRecentlyUsed) {
  std::vector<SlotView> slots = {pinned(slot("oldest", ModelType::kLlm, 1)),
                                 slot("middle", ModelType::kLlm, 3),
                                 slot("newest", ModelType::kLlm, 5)};
  const LoadTarget target{"c", ModelType::kLlm, Device::kGpu};
  EXPECT_EQ(victims(plan_eviction(slots, target, SlotLimits::uniform(3))),
            std::vector<std::string>{"middle"});
  EXPECT_TRUE(pinned_in_the_way(slots, target, SlotLimits::uniform(3)).empty());
  EXPECT_EQ(choose_lru_victim(slots, ModelType::kLlm, {}), "middle");
}

TEST(EvictionPolicy, ALoadThatOnlyAPinnedServerCouldMakeRoomForIsRefused) {
  std::vector<SlotView> slots = {pinned(slot("big", ModelType::kLlm, 1)),
                                 slot("emb", ModelType::kEmbedding, 0)};
  const LoadTarget target{"c", ModelType::kLlm, Device::kGpu};
  EXPECT_TRUE(plan_eviction(slots, target, SlotLimits::uniform(1)).empty()) << "nothing is evicted";
  EXPECT_EQ(pinned_in_the_way(slots, target, SlotLimits::uniform(1)),
            std::vector<std::string>{"big"});
  // Two slots, one pinned and one busy: the busy one drains and goes.
  slots.push_back(slot("busy", ModelType::kLlm, 9, 2));
  EXPECT_EQ(victims(plan_eviction(slots, target, SlotLimits::uniform(2))),
            std::vector<std::string>{"busy"});
  EXPECT_TRUE(pinned_in_the_way(slots, target, SlotLimits::uniform(2)).empty());
  // Both pinned: both named, in name order.
  slots.back().pinned = true;
  EXPECT_EQ(pinned_in_the_way(slots, target, SlotLimits::uniform(2)),
            (std::vector<std::string>{"big", "busy"}));
  // Other types and a free slot are never in the way.
  EXPECT_TRUE(pinned_in_the_way(slots, target, SlotLimits::uniform(3)).empty());
  EXPECT_TRUE(
      pinned_in_the_way(slots, {"e", ModelType::kEmbedding, Device::kGpu}, SlotLimits::uniform(2))
          .empty());
}

TEST(EvictionPolicy, APinnedModelReloadsItselfButKeepsTheNpuFromOthers) {
  std::vector<SlotView> slots = {pinned(slot("npu", ModelType::kLlm, 1, 0, Device::kNpu))};
  const SlotLimits limits = SlotLimits::uniform(4);
  EXPECT_EQ(victims(plan_eviction(slots, {"npu", ModelType::kLlm, Device::kNpu}, limits)),
            std::vector<std::string>{"npu"})
      << "an explicit reload of the pinned model itself";
  EXPECT_TRUE(pinned_in_the_way(slots, {"npu", ModelType::kLlm, Device::kNpu}, limits).empty());
  const LoadTarget other{"other", ModelType::kEmbedding, Device::kNpu};
  EXPECT_TRUE(plan_eviction(slots, other, limits).empty());
  EXPECT_EQ(pinned_in_the_way(slots, other, limits), std::vector<std::string>{"npu"});
}

}  // namespace
// Issue #29 §3: priorities.
SlotView ranked(SlotView s, int priority) {
  s.priority = priority;
  return s;
}

TEST(EvictionPolicy, TheLowestPriorityGoesFirstEvenWhenItWasUsedLast) {
  std::vector<SlotView> slots = {ranked(slot("old-high", ModelType::kLlm, 1), 5),
                                 ranked(slot("new-low", ModelType::kLlm, 9), 1),
                                 ranked(slot("mid", ModelType::kLlm, 5), 3)};
  const LoadTarget target{"c", ModelType::kLlm, Device::kGpu, 5};
  EXPECT_EQ(victims(plan_eviction(slots, target, SlotLimits::uniform(3))),
            std::vector<std::string>{"new-low"});
  EXPECT_EQ(victims(plan_eviction(slots, target, SlotLimits::uniform(1))),
            (std::vector<std::string>{"new-low", "mid", "old-high"}))
      << "an equal priority may go, after every lower one";
  EXPECT_EQ(choose_lru_victim(slots, ModelType::kLlm, {"new-low"}, 5), "mid");
  EXPECT_EQ(choose_lru_victim(slots, ModelType::kLlm, {"new-low"}, 2), "")
      << "nothing of a priority above the load's";
}

TEST(EvictionPolicy, ALowerPriorityLoadNeverEvictsAHigherOneAndWaitsForIt) {
  std::vector<SlotView> slots = {ranked(slot("main", ModelType::kLlm, 1), 10),
                                 slot("emb", ModelType::kEmbedding, 0)};
  const LoadTarget low{"side", ModelType::kLlm, Device::kGpu, 0};
  const SlotLimits one = SlotLimits::uniform(1);
  EXPECT_TRUE(plan_eviction(slots, low, one).empty()) << "nothing is evicted";
  EXPECT_EQ(outranking_in_the_way(slots, low, one), std::vector<std::string>{"main"});
  EXPECT_TRUE(pinned_in_the_way(slots, low, one).empty())
      << "a priority is waited for, not a reason to fail";
  // Busy or idle makes no difference, and a free slot or another type is
  // never in the way.
  slots[0].in_flight = 3;
  EXPECT_EQ(outranking_in_the_way(slots, low, one), std::vector<std::string>{"main"});
  EXPECT_TRUE(outranking_in_the_way(slots, low, SlotLimits::uniform(2)).empty());
  EXPECT_TRUE(
      outranking_in_the_way(slots, {"e2", ModelType::kEmbedding, Device::kGpu, 0}, one).empty());
  // An equal or higher priority evicts it (after draining, as ever).
  for (int priority : {10, 11}) {
    const LoadTarget high{"side", ModelType::kLlm, Device::kGpu, priority};
    EXPECT_EQ(victims(plan_eviction(slots, high, one)), std::vector<std::string>{"main"});
    EXPECT_TRUE(outranking_in_the_way(slots, high, one).empty());
  }
  // A reload of the model itself is never outranked by itself.
  EXPECT_TRUE(
      outranking_in_the_way(slots, {"main", ModelType::kLlm, Device::kGpu, 0}, one).empty());
}

TEST(EvictionPolicy, APinIsNotAPriorityAndTheNpuHonoursBoth) {
  const SlotLimits limits = SlotLimits::uniform(4);
  std::vector<SlotView> slots = {ranked(slot("npu-high", ModelType::kLlm, 1, 0, Device::kNpu), 7),
                                 pinned(slot("npu-pinned", ModelType::kAudio, 2, 0, Device::kNpu)),
                                 slot("npu-low", ModelType::kEmbedding, 3, 0, Device::kNpu)};
  const LoadTarget target{"new", ModelType::kLlm, Device::kNpu, 0};
  EXPECT_EQ(victims(plan_eviction(slots, target, limits)), std::vector<std::string>{"npu-low"});
  EXPECT_EQ(outranking_in_the_way(slots, target, limits), std::vector<std::string>{"npu-high"});
  EXPECT_EQ(pinned_in_the_way(slots, target, limits), std::vector<std::string>{"npu-pinned"});
  // Two slots: one pinned, one of a higher priority. Waiting could help.
  std::vector<SlotView> two = {pinned(slot("p", ModelType::kLlm, 1)),
                               ranked(slot("h", ModelType::kLlm, 2), 3)};
  const LoadTarget low{"x", ModelType::kLlm, Device::kGpu, 0};
  EXPECT_TRUE(pinned_in_the_way(two, low, SlotLimits::uniform(2)).empty());
  EXPECT_EQ(outranking_in_the_way(two, low, SlotLimits::uniform(2)), std::vector<std::string>{"h"});
}

// Issue #27 §1: a switch may start the new server while its victims stop
// only when memory is not what they make room for and they are idle.
TEST(StartWhileVictimsStop, OnlyIdleCpuServersThatFitBesideTheirVictims) {
  const VictimView idle_cpu{Device::kCpu, 0};
  EXPECT_TRUE(may_start_while_victims_stop(Device::kCpu, {idle_cpu}, true));
  EXPECT_TRUE(may_start_while_victims_stop(Device::kCpu, {idle_cpu, idle_cpu}, true));
  EXPECT_FALSE(may_start_while_victims_stop(Device::kCpu, {idle_cpu}, false))
      << "the victims' memory is needed";
  EXPECT_FALSE(may_start_while_victims_stop(Device::kCpu, {idle_cpu, {Device::kCpu, 1}}, true))
      << "a busy victim drains first";
  EXPECT_FALSE(may_start_while_victims_stop(Device::kGpu, {idle_cpu}, true));
  EXPECT_FALSE(may_start_while_victims_stop(Device::kCpu, {{Device::kGpu, 0}}, true));
  EXPECT_FALSE(may_start_while_victims_stop(Device::kNpu, {{Device::kNpu, 0}}, true));
  EXPECT_FALSE(may_start_while_victims_stop(Device::kCpu, {}, true)) << "nothing to overlap";
}

}  // namespace lemon
