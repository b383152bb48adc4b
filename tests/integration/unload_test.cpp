// POST /unload (issue #2 §7.4): one model, every model, or 404 for a model
// that is not loaded; unloaded backends exit, after exactly one SIGTERM
// (issue #27 §2), or SIGKILL after --stop-grace when they ignore it.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_events.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using UnloadTest = RouterTest;

TEST_F(UnloadTest, AModelThatIsNotLoadedIs404ModelNotLoaded) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.b"));
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
  pid_t a = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &a));
  pid_t b = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.b", &b));
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
  pid_t a_pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &a_pid));
  PidWatch a_watch(a_pid);
  pid_t e_pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e", &e_pid));
  PidWatch e_watch(e_pid);
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

// llama-server in the router's child mode (which the router starts it in)
// is stopped by its exit command on stdin, with no signal: a SIGTERM would
// leave it waiting for its stdin to end. The fake logs the command and every
// signal it gets; at debug level its lines reach the log.
TEST_F(UnloadTest, AStoppedBackendGetsItsExitCommandAndExitsCleanly) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--log-level", "debug"}));
  RouterEvents events(port());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  // The child's ready line is read beside /health's answer: the stop follows
  // it, as a stop at any later time would.
  std::optional<nlohmann::json> state;
  do {
    state = events.next("backend_state", "user.a");
    ASSERT_TRUE(state.has_value()) << "the fake reports its state in child mode";
  } while ((*state)["state"] != "ready");
  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.a"}}).status,
            200);
  auto stopped = events.next("server_stopped", "user.a");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["reason"], "unload");
  EXPECT_EQ((*stopped)["exit"], "exit code 0") << stopped->dump();
  EXPECT_GE((*stopped)["stop_s"].get<double>(), 0.0);
  EXPECT_EQ(router().count_log("exit command received"), 1) << router().log_text();
  EXPECT_EQ(router().count_log("main: received signal"), 0) << router().log_text();
}

// One SIGTERM, to the process group, for a llama-server that does not speak
// the child mode (one too old, or still loading): a second one makes it quit
// at once with status 1 instead of shutting down (the fake does the same).
TEST_F(UnloadTest, ABackendWithoutChildModeGetsOneSigtermAndExitsCleanly) {
  env_.write_sidecar(env_.add_llm("a"), {{"child_mode", false}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--log-level", "debug"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  RouterEvents events(port());
  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.a"}}).status,
            200);
  auto stopped = events.next("server_stopped", "user.a");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["exit"], "exit code 0") << stopped->dump();
  EXPECT_EQ(router().count_log("main: received signal 15"), 1) << router().log_text();
  EXPECT_EQ(router().count_log("second interrupt"), 0);
}

TEST_F(UnloadTest, ABackendThatIgnoresSigtermIsKilledAfterTheGrace) {
  env_.write_sidecar(env_.add_llm("a"), {{"ignore_sigterm", true}, {"child_mode", false}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--stop-grace", "0.2"}));
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &pid));
  PidWatch watch(pid);
  RouterEvents events(port());
  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.a"}}).status,
            200);
  auto stopped = events.next("server_stopped", "user.a");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["exit"], "killed by signal 9 (SIGKILL)") << stopped->dump();
  EXPECT_GE((*stopped)["stop_s"].get<double>(), 0.2) << "the grace was given";
  EXPECT_TRUE(watch.wait_exit(kWait));
}

}  // namespace
}  // namespace lemon::testing
