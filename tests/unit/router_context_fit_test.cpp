// The context fitted to memory (context_fit.h), over fixed budgets and an
// estimate that grows linearly with the context, as llama.cpp's does.
#include <gtest/gtest.h>

#include "lemon/router/context_fit.h"

namespace lemon {
namespace {

constexpr std::int64_t kFitTestMiB = std::int64_t{1024} * 1024;

// A GPU model: 1 GiB of weights on gpu0 plus `per_token` bytes of KV per
// token for each of `parallel` slots (and a draft's per token), 64 MiB in RAM.
struct FitTestModel {
  std::int64_t weights = 1024 * kFitTestMiB;
  std::int64_t per_token = 128 * 1024;  // 128 KiB a token
  int parallel = 1;
  std::int64_t draft_per_token = 0;
  DeviceBytes operator()(int ctx) const {
    const std::int64_t tokens = static_cast<std::int64_t>(ctx) * parallel;
    return {{"gpu0", weights + tokens * (per_token + draft_per_token)}, {"ram", 64 * kFitTestMiB}};
  }
};

TEST(FitContext, TakesTheLargestStepThatFitsTheRoom) {
  const FitTestModel model;
  // 1 GiB weights + 16384 tokens x 128 KiB = 3 GiB; give 3 GiB + 100 MiB.
  ContextFitAsk ask;
  ask.room = {{"gpu0", 3072 * kFitTestMiB + 100 * kFitTestMiB}, {"ram", 8192 * kFitTestMiB}};
  ask.trained = 131072;
  const ContextFit fit = fit_context(ask, model);
  EXPECT_EQ(fit.reason, ContextFit::Reason::kMemory);
  EXPECT_EQ(fit.ctx_size % kContextStep, 0);
  EXPECT_LE(model(fit.ctx_size).at("gpu0"), ask.room.at("gpu0"));
  EXPECT_GT(model(fit.ctx_size + kContextStep).at("gpu0"), ask.room.at("gpu0"))
      << "the next step would not fit: " << fit.ctx_size;
  EXPECT_EQ(fit.ctx_size, 16384 + 768);  // 100 MiB is 800 tokens: three steps of 256
  EXPECT_EQ(fit.device, "gpu0");
  EXPECT_EQ(fit.room, ask.room.at("gpu0"));
  EXPECT_EQ(fit.need, model(fit.ctx_size).at("gpu0"));
  EXPECT_NE(describe_context_fit(fit).find(std::to_string(fit.ctx_size) + " tokens"),
            std::string::npos);
}

TEST(FitContext, CountsEverySlotAndTheDraftsCache) {
  ContextFitAsk ask;
  ask.room = {{"gpu0", 3072 * kFitTestMiB}, {"ram", 8192 * kFitTestMiB}};
  ask.trained = 131072;
  FitTestModel alone;
  const int single = fit_context(ask, alone).ctx_size;
  FitTestModel four = alone;
  four.parallel = 4;
  const int per_slot = fit_context(ask, four).ctx_size;
  EXPECT_EQ(single, 16384);
  EXPECT_EQ(per_slot, 4096) << "four slots share the room";
  FitTestModel drafted = alone;
  drafted.draft_per_token = 128 * 1024;  // a draft with the same KV per token
  EXPECT_EQ(fit_context(ask, drafted).ctx_size, 8192);
}

TEST(FitContext, StopsAtTheTrainedContext) {
  ContextFitAsk ask;
  ask.room = {{"gpu0", 64 * 1024 * kFitTestMiB}};
  ask.trained = 40960;
  const ContextFit fit = fit_context(ask, FitTestModel{});
  EXPECT_EQ(fit.ctx_size, 40960);
  EXPECT_EQ(fit.reason, ContextFit::Reason::kTrainedContext);
  EXPECT_EQ(fit.ceiling, 40960);
}

TEST(FitContext, CapsAModelWhoseTrainedContextIsUnknown) {
  ContextFitAsk ask;
  ask.room = {{"gpu0", 64 * 1024 * kFitTestMiB}};
  const ContextFit fit = fit_context(ask, FitTestModel{});
  EXPECT_EQ(fit.ctx_size, kUntrainedContextCap);
  EXPECT_EQ(fit.reason, ContextFit::Reason::kTrainedContext);
  EXPECT_NE(describe_context_fit(fit).find("unknown"), std::string::npos);
}

TEST(FitContext, TakesTheFloorWhenEvenThatDoesNotFit) {
  ContextFitAsk ask;
  ask.room = {{"gpu0", 512 * kFitTestMiB}, {"ram", 8192 * kFitTestMiB}};  // not even the weights
  ask.trained = 131072;
  const ContextFit fit = fit_context(ask, FitTestModel{});
  EXPECT_EQ(fit.ctx_size, kFittedContextFloor);
  EXPECT_EQ(fit.reason, ContextFit::Reason::kFloor);
  EXPECT_EQ(fit.device, "gpu0");
  EXPECT_EQ(fit.need, FitTestModel{}(kFittedContextFloor).at("gpu0"));
}

TEST(FitContext, ANarrowRoomOnAnyDeviceBounds) {
  ContextFitAsk ask;
  ask.room = {{"gpu0", 64 * 1024 * kFitTestMiB},
              {"ram", 32 * kFitTestMiB}};  // RAM too small for its overhead
  ask.trained = 131072;
  const ContextFit fit = fit_context(ask, FitTestModel{});
  EXPECT_EQ(fit.reason, ContextFit::Reason::kFloor);
  EXPECT_EQ(fit.device, "ram");
}

TEST(FitContext, ATrainedContextBelowTheFloorWins) {
  ContextFitAsk ask;
  ask.room = {{"gpu0", 64 * 1024 * kFitTestMiB}};
  ask.trained = 2048;
  EXPECT_EQ(fit_context(ask, FitTestModel{}).ctx_size, 2048);
}

TEST(FitContext, TakesTheFloorWhenMemoryIsNotMeasured) {
  ContextFitAsk ask;
  ask.measured = false;
  ask.trained = 131072;
  const ContextFit fit = fit_context(ask, FitTestModel{});
  EXPECT_EQ(fit.ctx_size, kFittedContextFloor);
  EXPECT_EQ(fit.reason, ContextFit::Reason::kNotMeasured);
  EXPECT_STREQ(context_fit_reason_name(fit.reason), "not_measured");
}

}  // namespace
}  // namespace lemon
