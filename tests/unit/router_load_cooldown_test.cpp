// LoadCooldown, the pure bookkeeping behind "a model whose load failed twice
// in a row rests" (issue #11 §6): time is passed in, nothing sleeps.
#include <gtest/gtest.h>

#include "lemon/router/load_cooldown.h"

namespace lemon {
namespace {

using std::chrono::seconds;
using Clock = LoadCooldown::Clock;

TEST(LoadCooldown, RestStartsAtTheSecondFailureAndDoublesUpToFiveMinutes) {
  EXPECT_EQ(cooldown_after(0), seconds(0));
  EXPECT_EQ(cooldown_after(1), seconds(0));
  EXPECT_EQ(cooldown_after(2), seconds(5));
  EXPECT_EQ(cooldown_after(3), seconds(10));
  EXPECT_EQ(cooldown_after(4), seconds(20));
  EXPECT_EQ(cooldown_after(7), seconds(160));
  EXPECT_EQ(cooldown_after(8), seconds(300));
  EXPECT_EQ(cooldown_after(1000), seconds(300));
}

TEST(LoadCooldown, RefusesWithTheLastErrorAndTheSecondsLeft) {
  LoadCooldown c;
  const auto t0 = Clock::now();
  const Error first(ErrorCode::kBackendExited, "exited with status 1");
  EXPECT_EQ(c.record_failure("m", first, t0, false), seconds(0));
  EXPECT_FALSE(c.refusal("m", t0)) << "one failure does not rest";

  const Error second =
      Error(ErrorCode::kBackendStartTimeout, "not ready in 600 s").with_detail("last lines");
  EXPECT_EQ(c.record_failure("m", second, t0, false), seconds(5));
  auto r = c.refusal("m", t0 + std::chrono::milliseconds(1200));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code(), ErrorCode::kBackendStartTimeout) << "the last error, not the first";
  EXPECT_EQ(r->retry_after(), 4) << "3.8 s left rounds up";
  EXPECT_EQ(r->detail(), "last lines");
  EXPECT_NE(r->message().find("not ready in 600 s"), std::string::npos) << r->message();
  EXPECT_FALSE(c.refusal("m", t0 + seconds(5))) << "the rest is over";
  EXPECT_FALSE(c.refusal("other", t0)) << "other models are not affected";
}

TEST(LoadCooldown, ResetForgetsTheFailures) {
  LoadCooldown c;
  const auto t0 = Clock::now();
  const Error e(ErrorCode::kBackendExited, "boom");
  c.record_failure("m", e, t0, false);
  c.record_failure("m", e, t0, false);
  ASSERT_TRUE(c.refusal("m", t0));
  c.reset("m");
  EXPECT_FALSE(c.refusal("m", t0));
  EXPECT_EQ(c.consecutive_failures("m"), 0);
  EXPECT_EQ(c.record_failure("m", e, t0, false), seconds(0)) << "counting starts again";
}

TEST(LoadCooldown, EachFurtherFailureDoublesTheRest) {
  LoadCooldown c;
  auto t = Clock::now();
  const Error e(ErrorCode::kSpawnFailed, "no memory");
  c.record_failure("m", e, t, false);
  EXPECT_EQ(c.record_failure("m", e, t, false), seconds(5));
  t += seconds(5);
  EXPECT_EQ(c.record_failure("m", e, t, false), seconds(10));
  auto r = c.refusal("m", t);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->retry_after(), 10);
  EXPECT_EQ(c.consecutive_failures("m"), 3);
}

TEST(LoadCooldown, RemembersAFailureAfterAnEvictAllUntilReset) {
  LoadCooldown c;
  const auto t0 = Clock::now();
  const Error e(ErrorCode::kBackendExited, "exited with status 1");
  c.record_failure("m", e, t0, false);
  EXPECT_FALSE(c.failed_after_evict_all("m")) << "a failure with other models loaded says little";
  c.record_failure("m", e, t0, true);
  EXPECT_TRUE(c.failed_after_evict_all("m"));
  c.record_failure("m", e, t0, false);
  EXPECT_TRUE(c.failed_after_evict_all("m")) << "a later failure that evicted nothing keeps it";
  EXPECT_FALSE(c.failed_after_evict_all("other"));
  c.reset("m");  // a load that worked, or POST /load
  EXPECT_FALSE(c.failed_after_evict_all("m"));
}

}  // namespace
}  // namespace lemon
