// Load failures (issue #2 §7.12): deterministic failures (missing model file,
// missing backend binary) evict nothing; a backend that refuses to start makes
// the router evict every model and try once more, and the error names the
// exit code and the backend's last output line.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using LoadFailuresTest = RouterTest;

TEST_F(LoadFailuresTest, AMissingModelFileIsNamedAndEvictsNothing) {
  env_.add_llm("a");
  const std::string missing = env_.add_missing_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router());  // one LLM slot: loading b would evict a
  pid_t a = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &a));

  for (int i = 0; i < 2; ++i) {
    HttpReply r = i == 0 ? load(port(), "user.b") : chat(port(), "user.b");
    EXPECT_EQ(r.status, 404) << r.body;
    auto j = r.json();
    EXPECT_TRUE(is_error_envelope(j)) << r.body;
    EXPECT_EQ(j["error"]["code"], "model_not_downloaded") << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(missing), std::string::npos) << r.body;
    auto h = health(port());
    EXPECT_EQ(loaded_names(h), (Names{"user.a"}));
    EXPECT_EQ(loaded_field(h, "user.a", "pid"), a);
  }
  EXPECT_EQ(router().count_log("starting user.b:"), 0);
}

TEST_F(LoadFailuresTest, AMissingBackendBinaryIs500AndEvictsNothing) {
  env_.add_llm("a");
  env_.add_flm("f", "llama3.2:1b");
  const std::string nowhere = env_.root() + "/no-such-dir/llama-server";
  ASSERT_NO_FATAL_FAILURE(start_router(
      {}, {{"LEMONADE_LLAMACPP_CPU_BIN", nowhere}, {"LEMON_FAKE_FLM_INSTALLED", "llama3.2:1b"}}));
  pid_t f = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.f", &f));  // an LLM: loading user.a would evict it

  HttpReply r = load(port(), "user.a");
  EXPECT_EQ(r.status, 500) << r.body;
  auto j = r.json();
  EXPECT_TRUE(is_error_envelope(j)) << r.body;
  EXPECT_EQ(j["error"]["code"], "model_load_error");
  EXPECT_NE(j["error"]["message"].get<std::string>().find(nowhere), std::string::npos) << r.body;
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.f"}));
  EXPECT_EQ(loaded_field(h, "user.f", "pid"), f);
  EXPECT_EQ(router().count_log("evicting"), 0);
}

TEST_F(LoadFailuresTest, ABackendThatRefusesToStartEvictsEverythingAndIsTriedTwice) {
  env_.add_embedding("e");
  const std::string x = env_.add_llm("x");
  env_.write_sidecar(x,
                     {{"exit_at_start", {{"code", 3}, {"message", "boom: segmentation fault"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  pid_t e = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e", &e));  // another type: a plain load of x would keep it
  ASSERT_GT(e, 0);
  PidWatch e_watch(e);

  HttpReply r = load(port(), "user.x");
  EXPECT_EQ(r.status, 500) << r.body;
  auto j = r.json();
  EXPECT_TRUE(is_error_envelope(j)) << r.body;
  EXPECT_EQ(j["error"]["code"], "model_load_error");
  const std::string msg = j["error"].value("message", "");
  EXPECT_NE(msg.find("exit code 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("boom: segmentation fault"), std::string::npos) << msg;

  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
  EXPECT_TRUE(e_watch.wait_exit(kWait)) << "the evict-all did not stop user.e";
  // Two attempts: the first and the retry after evict-all. A launch that
  // found its port taken by another program (ctest -j2 runs other routers)
  // is retried on another port and is not an attempt.
  EXPECT_EQ(router().count_log("starting user.x:") -
                router().count_log("retrying user.x on another port") -
                router().count_log("while user.x started; retrying"),
            2);
  EXPECT_EQ(router().count_log("evicting every model and retrying"), 1);
  EXPECT_EQ(router().count_log("starting user.e:"), 1) << "user.e must not be reloaded";
}

TEST_F(LoadFailuresTest, ABrokenModelEvictsEverythingOnlyOnce) {
  // Its load failed with every other model evicted: evicting them again for
  // it would change nothing, so its next failures evict nothing. POST /load
  // asks for the whole policy again.
  env_.add_embedding("e");
  const std::string x = env_.add_llm("x");
  env_.write_sidecar(x, {{"exit_at_start", {{"code", 1}, {"message", "bad magic"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  pid_t first_e = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e", &first_e));
  PidWatch first_watch(first_e);
  EXPECT_EQ(chat(port(), "user.x").status, 500);
  EXPECT_TRUE(first_watch.wait_exit(kWait)) << "the first failure evicts everything";
  ASSERT_EQ(router().count_log("evicting every model and retrying"), 1);

  pid_t e = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e", &e));
  HttpReply again = chat(port(), "user.x");
  EXPECT_EQ(again.status, 500) << again.body;
  EXPECT_NE(again.json()["error"].value("message", "").find("bad magic"), std::string::npos)
      << again.body;
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.e"}));
  EXPECT_EQ(loaded_field(h, "user.e", "pid"), e) << "user.e stayed loaded";
  EXPECT_EQ(router().count_log("evicting every model and retrying"), 1);
  EXPECT_EQ(router().count_log("no model was evicted for it"), 1);

  PidWatch e_watch(e);
  EXPECT_EQ(load(port(), "user.x").status, 500);
  EXPECT_TRUE(e_watch.wait_exit(kWait)) << "POST /load evicts everything again";
  EXPECT_EQ(router().count_log("evicting every model and retrying"), 2);
}

TEST_F(LoadFailuresTest, AutoLoadReportsTheSameFailure) {
  const std::string x = env_.add_llm("x");
  env_.write_sidecar(x,
                     {{"exit_at_start", {{"code", 3}, {"message", "boom: segmentation fault"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = chat(port(), "user.x");
  EXPECT_EQ(r.status, 500) << r.body;
  auto j = r.json();
  EXPECT_TRUE(is_error_envelope(j)) << r.body;
  EXPECT_NE(j["error"].value("message", "").find("boom: segmentation fault"), std::string::npos)
      << r.body;

  // Once the cause is gone the model loads.
  env_.write_sidecar(x, nlohmann::json::object());
  HttpReply ok = chat(port(), "user.x");
  EXPECT_EQ(ok.status, 200) << ok.body;
}

}  // namespace
}  // namespace lemon::testing
