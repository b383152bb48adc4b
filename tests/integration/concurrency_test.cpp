// Requests during a load that waits for a busy server to drain (issue #2
// §7.10): the router keeps answering /health, /models and /stats quickly, and
// the load completes as soon as the busy stream ends.
#include <future>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using ConcurrencyTest = RouterTest;

TEST_F(ConcurrencyTest, TheRouterStaysResponsiveWhileALoadWaitsForADrain) {
  env_.add_llm("m1");
  env_.add_llm("m2");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  pid_t m1 = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.m1", &m1));
  ASSERT_GT(m1, 0);
  PidWatch m1_watch(m1);

  // Declared before the stream so that, if an assertion fails, the stream is
  // closed first and the pending load can finish instead of blocking teardown.
  std::future<HttpReply> loading;
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.m1", 100000, 50).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());

  loading = std::async(std::launch::async, [&] { return load(port(), "user.m2"); });
  ASSERT_TRUE(router().wait_for_log("waiting for 'user.m1' to finish"));

  // The load waits on a stream that never ends: /health answering at all
  // shows it waits on nothing the load holds (how fast is the benchmark's).
  for (int i = 0; i < 5; ++i) {
    HttpReply h = http_get(port(), "/api/v1/health");
    ASSERT_EQ(h.status, 200);
    auto j = h.json();
    EXPECT_EQ(loaded_field(j, "user.m1", "in_flight"), 1) << j.dump();
    EXPECT_EQ(loaded_field(j, "user.m1", "state"), "draining") << j.dump();
  }
  HttpReply models = http_get(port(), "/api/v1/models");
  EXPECT_EQ(models.status, 200);
  EXPECT_NE(models.body.find("\"id\":\"m2\""), std::string::npos) << models.body;
  EXPECT_EQ(http_get(port(), "/api/v1/stats").status, 200);
  // The load is still waiting: the stream holds m1.
  EXPECT_EQ(loading.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);

  s.disconnect();
  ASSERT_EQ(loading.wait_for(kWait), std::future_status::ready) << "the load never completed";
  HttpReply loaded = loading.get();
  EXPECT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_TRUE(m1_watch.wait_exit(kWait));
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.m2"}));
}

}  // namespace
}  // namespace lemon::testing
