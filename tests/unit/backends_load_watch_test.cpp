// The load clock (load_watch.h): a backend that reports its load is failed
// when it goes silent for the stall bound, one that never reported only at
// the hard cap.
#include <gtest/gtest.h>

#include "lemon/backends/load_watch.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;

const LoadClock::time_point kLoadStart = LoadClock::time_point{} + 1000s;

TEST(LoadDeadline, ABackendThatNeverReportedHasTheHardCapAlone) {
  LoadSigns signs;
  signs.last = kLoadStart + 5s;  // log lines alone do not make it a reporter
  const LoadDeadline d = load_deadline(kLoadStart, signs, 600s, 60s);
  EXPECT_EQ(d.at, kLoadStart + 600s);
  EXPECT_FALSE(d.stall);
}

TEST(LoadDeadline, EachSignOfProgressRestartsTheStallBound) {
  LoadSigns signs{true, kLoadStart + 10s, "text_model 10%"};
  EXPECT_EQ(load_deadline(kLoadStart, signs, 600s, 60s).at, kLoadStart + 70s);
  EXPECT_TRUE(load_deadline(kLoadStart, signs, 600s, 60s).stall);
  signs.last = kLoadStart + 500s;  // a slow load that keeps reporting waits on...
  EXPECT_EQ(load_deadline(kLoadStart, signs, 600s, 60s).at, kLoadStart + 560s);
  signs.last = kLoadStart + 580s;  // ...but never past the hard cap
  const LoadDeadline capped = load_deadline(kLoadStart, signs, 600s, 60s);
  EXPECT_EQ(capped.at, kLoadStart + 600s);
  EXPECT_FALSE(capped.stall);
}

TEST(LoadDeadline, ZeroTurnsTheStallBoundOff) {
  const LoadSigns signs{true, kLoadStart + 1s, "text_model 0%"};
  const LoadDeadline d = load_deadline(kLoadStart, signs, 600s, 0s);
  EXPECT_EQ(d.at, kLoadStart + 600s);
  EXPECT_FALSE(d.stall);
}

TEST(LoadWatch, ReportsArmItAndLinesKeepItAlive) {
  LoadWatch watch;
  watch.activity(kLoadStart + 1s);
  EXPECT_FALSE(watch.signs().reports);
  watch.progress("text_model 0%", kLoadStart + 2s);
  watch.activity(kLoadStart + 3s);
  LoadSigns s = watch.signs();
  EXPECT_TRUE(s.reports);
  EXPECT_EQ(s.last, kLoadStart + 3s);
  EXPECT_EQ(s.stage, "text_model 0%") << "a log line is no stage";
  watch.restart();
  EXPECT_FALSE(watch.signs().reports);
  EXPECT_EQ(watch.signs().stage, "");
}

TEST(LoadStageText, NamesTheStageAndHowFarItGot) {
  EXPECT_EQ(load_stage_text({{"text_model", "mmproj_model"}, "text_model", 0.426}),
            "text_model 42%");
  EXPECT_EQ(load_stage_text({{"text_model", "mmproj_model"}, "mmproj_model", std::nullopt}),
            "mmproj_model");
}

}  // namespace
}  // namespace lemon
