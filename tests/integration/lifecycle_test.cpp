// The router's own life (issue #2 §7.8, §7.9): kill -9 leaves no orphaned
// backends, and SIGTERM exits 0 after stopping every backend.
#include <csignal>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using LifecycleTest = RouterTest;
constexpr std::chrono::milliseconds kOrphanDeadline{10000};

TEST_F(LifecycleTest, KillDashNineLeavesNoOrphanedBackends) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  const int a = load_ok("user.a");
  const int b = load_ok("user.b");
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  PidWatch a_watch(a);
  PidWatch b_watch(b);

  router().signal(SIGKILL);
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->signaled);
  EXPECT_TRUE(a_watch.wait_exit(kOrphanDeadline)) << "backend " << a << " outlived the router";
  EXPECT_TRUE(b_watch.wait_exit(kOrphanDeadline)) << "backend " << b << " outlived the router";
}

TEST_F(LifecycleTest, SigtermExitsZeroAndStopsEveryBackend) {
  env_.add_llm("a");
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router());
  PidWatch a_watch(load_ok("user.a"));
  PidWatch e_watch(load_ok("user.e"));

  router().signal(SIGTERM);
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value()) << "the router did not exit after SIGTERM";
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 0);
  EXPECT_TRUE(a_watch.wait_exit(kOrphanDeadline));
  EXPECT_TRUE(e_watch.wait_exit(kOrphanDeadline));
  EXPECT_EQ(router().count_log("received signal 15"), 1);
}

TEST_F(LifecycleTest, SigtermWithAStreamOpenStillExitsPromptly) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 100000, 50).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());
  PidWatch a_watch(loaded_pid(port(), "user.a"));

  router().signal(SIGTERM);
  auto exit = router().wait_exit(std::chrono::milliseconds(15000));
  ASSERT_TRUE(exit.has_value()) << "an open stream kept the router alive after SIGTERM";
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 0);
  EXPECT_TRUE(a_watch.wait_exit(kOrphanDeadline));
  s.rest();
  EXPECT_TRUE(s.ended());
}

}  // namespace
}  // namespace lemon::testing
