// The router's own life (issue #2 §7.8, §7.9): kill -9 leaves no orphaned
// backends, and SIGTERM exits 0 after stopping every backend.
#include <csignal>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/raw_client.h"
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
  pid_t a = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &a));
  pid_t b = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.b", &b));
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
  pid_t a_pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &a_pid));
  PidWatch a_watch(a_pid);
  pid_t e_pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e", &e_pid));
  PidWatch e_watch(e_pid);

  router().signal(SIGTERM);
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value()) << "the router did not exit after SIGTERM";
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 0);
  EXPECT_TRUE(a_watch.wait_exit(kOrphanDeadline));
  EXPECT_TRUE(e_watch.wait_exit(kOrphanDeadline));
  EXPECT_EQ(router().count_log("received signal 15"), 1);
}

TEST_F(LifecycleTest, SigtermLetsAnInFlightStreamFinish) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 6, 100).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());
  PidWatch a_watch(loaded_pid(port(), "user.a"));

  router().signal(SIGTERM);
  auto rest = s.rest();
  ASSERT_FALSE(rest.empty());
  EXPECT_TRUE(rest.back().is_done());
  for (const auto& e : rest) {
    EXPECT_EQ(e.data.find("\"error\""), std::string::npos) << "the stream was cut: " << e.data;
  }
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 0);
  EXPECT_TRUE(a_watch.wait_exit(kOrphanDeadline));
  EXPECT_EQ(router().count_log("drained: no request in flight"), 1) << router().log_text();
}

TEST_F(LifecycleTest, DuringTheDrainNewRequestsOnOpenConnectionsGet503) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 100000, 50).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());
  RawClient keep_alive(port());
  const std::string health =
      "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port()) + "\r\n\r\n";
  keep_alive.send(health);
  ASSERT_EQ(keep_alive.read_response().status, 200);
  // Half of the next request before the signal, the rest after it.
  keep_alive.send(health.substr(0, 10));
  router().signal(SIGTERM);
  ASSERT_TRUE(router().wait_for_log("received signal 15; draining"));
  keep_alive.send(health.substr(10));
  auto r = keep_alive.read_response();
  EXPECT_EQ(r.status, 503) << r.head;
  EXPECT_EQ(RawClient::header(r.head, "connection"), "close");
  EXPECT_NE(r.body.find("shutting_down"), std::string::npos) << r.body;
  router().signal(SIGTERM);  // the second signal skips the drain
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 0);
}

TEST_F(LifecycleTest, PastTheDrainTimeoutAStreamEndsWithAnErrorEventAndDone) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--drain-timeout", "0.3"}));
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 100000, 50).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());
  PidWatch a_watch(loaded_pid(port(), "user.a"));

  router().signal(SIGTERM);
  auto rest = s.rest();
  ASSERT_GE(rest.size(), 2u);
  EXPECT_TRUE(rest.back().is_done());
  auto error = nlohmann::json::parse(rest[rest.size() - 2].data, nullptr, false);
  ASSERT_TRUE(is_error_envelope(error)) << rest[rest.size() - 2].data;
  EXPECT_NE(error["error"]["message"].get<std::string>().find("--drain-timeout"), std::string::npos)
      << error.dump();
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 0);
  EXPECT_TRUE(a_watch.wait_exit(kOrphanDeadline));
  EXPECT_EQ(router().count_log("--drain-timeout passed: cutting 1 request(s) still in flight"), 1);
}

TEST_F(LifecycleTest, ASecondSignalSkipsTheDrain) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());  // the default drain is 30 s
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 100000, 50).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());
  router().signal(SIGTERM);
  ASSERT_TRUE(router().wait_for_log("draining 1 in-flight request(s)"));
  router().signal(SIGINT);
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value()) << "the second signal did not end the drain";
  EXPECT_EQ(exit->code, 0);
  auto rest = s.rest();
  ASSERT_FALSE(rest.empty());
  EXPECT_TRUE(rest.back().is_done());
  EXPECT_EQ(router().count_log("second signal, drain skipped: cutting 1 request(s)"), 1);
}

}  // namespace
}  // namespace lemon::testing
