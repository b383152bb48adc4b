// Default models (issue #29 §3, llama-swap #413): --default-model is loaded
// at start and, after another model's load displaced it, loaded again once
// its type has been idle for --default-model-delay.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using DefaultModelTest = RouterTest;

TEST_F(DefaultModelTest, ItLoadsAtStartAndComesBackAfterItsTypeWasIdle) {
  env_.add_llm("small");
  env_.add_llm("big");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1", "--default-model", "user.small",
                                        "--default-model-delay", "0.3"}));
  ASSERT_TRUE(eventually([&] { return loaded_names(health(port())) == Names{"user.small"}; }))
      << health(port()).dump();
  const int first = loaded_pid(port(), "user.small");

  // A big model displaces it; once nothing has used the LLM slot for the
  // delay, the default is back and the big model makes room for it.
  PidWatch small_watch(first);
  pid_t big = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.big", &big));
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.big"}));
  EXPECT_TRUE(small_watch.wait_exit(kWait));
  PidWatch big_watch(big);
  ASSERT_TRUE(eventually([&] { return loaded_names(health(port())) == Names{"user.small"}; }))
      << health(port()).dump();
  EXPECT_TRUE(big_watch.wait_exit(kWait));
  EXPECT_NE(loaded_pid(port(), "user.small"), first) << "a new backend";
  EXPECT_GE(router().count_log("loading default model 'user.small'"), 2);
  ASSERT_EQ(chat(port(), "user.small").status, 200);
}

TEST_F(DefaultModelTest, ADefaultThatCannotLoadIsReportedAndTheRouterServes) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--default-model", "user.nope"}));
  EXPECT_TRUE(router().wait_for_log("default model 'user.nope' cannot load"));
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a"}));
}

}  // namespace
}  // namespace lemon::testing
