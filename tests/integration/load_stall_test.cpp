// Loads time out on a stall (--load-stall-timeout), against the real router
// and the fake llama-server in router child mode: a slow load that keeps
// reporting its progress loads past the stall bound; one that stops
// reporting fails at it, naming the last stage it reached; a backend that
// does not report (an older llama-server) has only --load-timeout.
#include <chrono>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using LoadStallTest = RouterTest;
using StallClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST_F(LoadStallTest, ASlowLoadThatReportsProgressLoadsPastTheStallBound) {
  // 3 s of loading, a report every 200 ms; a second's silence would fail it.
  env_.write_sidecar(env_.add_llm("slow"),
                     {{"startup_delay_ms", 3000}, {"load_progress_steps", 15}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--load-stall-timeout", "1", "--load-timeout", "60"}));
  const auto began = StallClock::now();
  const HttpReply r = load(port(), "user.slow");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_GE(StallClock::now() - began, 2s) << "it loaded for longer than the stall bound";
}

TEST_F(LoadStallTest, ALoadThatStopsReportingFailsAtTheStallBoundNamingItsStage) {
  // It reports text_model 0 % and 25 %, then nothing, for ever.
  env_.write_sidecar(
      env_.add_llm("stuck"),
      {{"startup_delay_ms", 2000}, {"load_progress_steps", 4}, {"load_stalls_after_steps", 1}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--load-stall-timeout", "1", "--load-timeout", "600"}));
  const auto began = StallClock::now();
  const HttpReply r = load(port(), "user.stuck");
  EXPECT_LT(StallClock::now() - began, 60s) << "the stall bound, not the 600 s cap";
  ASSERT_EQ(r.status, 500) << r.body;
  const auto j = r.json();
  EXPECT_EQ(j["error"]["code"], "model_load_error") << r.body;
  const std::string message = j["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("stopped making progress"), std::string::npos) << message;
  EXPECT_NE(message.find("text_model 25%"), std::string::npos) << message;
  EXPECT_NE(message.find("--load-stall-timeout"), std::string::npos) << message;
  EXPECT_EQ(loaded_names(health(port())), Names{});
}

TEST_F(LoadStallTest, ABackendThatDoesNotReportHasOnlyTheLoadTimeout) {
  // A llama-server from before router child mode: no state lines at all.
  env_.write_sidecar(env_.add_llm("old"), {{"startup_delay_ms", 2500}, {"child_mode", false}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--load-stall-timeout", "1", "--load-timeout", "60"}));
  const HttpReply r = load(port(), "user.old");
  EXPECT_EQ(r.status, 200) << r.body;
}

}  // namespace
}  // namespace lemon::testing
