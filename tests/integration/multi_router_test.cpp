// Two routers on one machine must each talk only to the backends they
// started. Regression: both routers used to scan ports from 8001 and trust a
// health 200 from whatever answered on the port, so one could adopt the
// other's backend. Now a probe is trusted only if the child owns the
// listening socket (process/socket_owner.h), and each router starts its port
// scan at its own offset.
#include <thread>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using MultiRouterTest = RouterTest;

// The server `port` reports for `model` is the process it started on that model.
void expect_own_backend(int port, const std::string& model, const std::string& file, int round) {
  auto entry = loaded_entry(health(port), model);
  ASSERT_TRUE(entry.has_value()) << "round " << round << ": " << model << " is not loaded";
  auto state = fake_state((*entry)["backend_url"]);
  EXPECT_EQ(state["pid"], (*entry)["pid"])
      << "round " << round << ": " << model << "'s backend_url is served by another process";
  EXPECT_EQ(state["model"], file) << "round " << round;
}

TEST_F(MultiRouterTest, ConcurrentRoutersKeepTheirOwnBackends) {
  const std::string a = env_.add_llm("a");
  TestEnv other_env;
  const std::string b = other_env.add_llm("b");
  // Fresh routers each round: both allocators then start at the same port.
  for (int round = 0; round < 30 && !HasFailure(); ++round) {
    ASSERT_NO_FATAL_FAILURE(start_router());
    RouterProcess other({"--port", "0", "--llamacpp", "cpu"}, other_env.router_env());
    ASSERT_GT(other.wait_listening(), 0) << other.log_text();

    HttpReply loaded_b;
    std::thread t([&] { loaded_b = load(other.port(), "user.b"); });
    HttpReply loaded_a = load(port(), "user.a");
    t.join();
    ASSERT_EQ(loaded_a.status, 200) << "round " << round << ": " << loaded_a.body;
    ASSERT_EQ(loaded_b.status, 200) << "round " << round << ": " << loaded_b.body;
    expect_own_backend(port(), "user.a", a, round);
    expect_own_backend(other.port(), "user.b", b, round);
    EXPECT_EQ(router().count_log("exited unexpectedly"), 0) << "round " << round;
    EXPECT_EQ(other.count_log("exited unexpectedly"), 0) << "round " << round << "\n"
                                                         << other.log_text();
  }
}

}  // namespace
}  // namespace lemon::testing
