// POST /unload (issue #2 §7.4): one model, every model, or 404 for a model
// that is not loaded; unloaded backends exit.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using UnloadTest = RouterTest;

TEST_F(UnloadTest, AModelThatIsNotLoadedIs404ModelNotLoaded) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router());
  load_ok("user.b");
  HttpReply r = http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.a"}});
  EXPECT_EQ(r.status, 404) << r.body;
  auto j = r.json();
  EXPECT_TRUE(is_error_envelope(j)) << r.body;
  EXPECT_EQ(j["error"]["code"], "model_not_loaded");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("user.a"), std::string::npos);
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.b"}));
}

TEST_F(UnloadTest, UnloadsOneNamedModel) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  const int a = load_ok("user.a");
  const int b = load_ok("user.b");
  PidWatch a_watch(a);
  HttpReply r = http_post(port(), "/v1/unload", nlohmann::json{{"model_name", "user.a"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "success");
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.b"}));
  EXPECT_EQ(loaded_field(h, "user.b", "pid"), b);
  EXPECT_TRUE(a_watch.wait_exit(kWait));
}

class UnloadAllTest : public RouterTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(UnloadAllTest, UnloadsEveryModelAndStopsTheirBackends) {
  env_.add_llm("a");
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router());
  PidWatch a_watch(load_ok("user.a"));
  PidWatch e_watch(load_ok("user.e"));
  ASSERT_EQ(loaded_names(health(port())).size(), 2u);

  HttpReply r = http_post(port(), "/api/v1/unload", GetParam());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "success");
  auto h = health(port());
  EXPECT_TRUE(h["all_models_loaded"].empty()) << h.dump();
  EXPECT_TRUE(h["model_loaded"].is_null()) << h.dump();
  EXPECT_TRUE(a_watch.wait_exit(kWait));
  EXPECT_TRUE(e_watch.wait_exit(kWait));
}

INSTANTIATE_TEST_SUITE_P(Bodies, UnloadAllTest, ::testing::Values("{}", ""),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param.empty() ? "EmptyBody" : "EmptyObject";
                         });

}  // namespace
}  // namespace lemon::testing
