// The command line (issue #2 §7.13): invalid values exit 2 with one line on
// stderr; a flag beats its environment variable, which beats the default;
// every flag Lemonade's CLI passes is accepted.
#include <filesystem>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/loopback_listener.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using CliTest = RouterTest;

struct BadArgs {
  const char* name;
  std::vector<std::string> args;
};

void PrintTo(const BadArgs& b, std::ostream* os) {
  for (const auto& a : b.args) {
    *os << a << ' ';
  }
}

class InvalidCliTest : public RouterTest, public ::testing::WithParamInterface<BadArgs> {};

TEST_P(InvalidCliTest, ExitsWithCode2AndOneLineOnStderr) {
  RouterProcess& r = launch_router(GetParam().args);
  auto exit = r.wait_exit();
  ASSERT_TRUE(exit.has_value()) << "the router did not exit";
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 2);
  auto lines = r.log_lines();
  ASSERT_EQ(lines.size(), 1u) << r.log_text();
  EXPECT_EQ(lines[0].rfind("lemonade-router: ", 0), 0u) << lines[0];
  EXPECT_GT(lines[0].size(), std::string("lemonade-router: ").size());
}

INSTANTIATE_TEST_SUITE_P(
    Values, InvalidCliTest,
    ::testing::Values(
        BadArgs{"MaxLoadedModelsZero", {"--max-loaded-models", "0"}},
        BadArgs{"MaxLoadedModelsSixValues", {"--max-loaded-models", "1", "2", "3", "4", "5", "6"}},
        BadArgs{"PortNotANumber", {"--port", "abc"}}, BadArgs{"PortTooLarge", {"--port", "70000"}},
        BadArgs{"UnknownLlamacppBackend", {"--llamacpp", "foo"}},
        BadArgs{"UnknownLogLevel", {"--log-level", "loud"}},
        BadArgs{"CtxSizeZero", {"--ctx-size", "0"}}, BadArgs{"UnknownFlag", {"--no-such-flag"}}),
    [](const ::testing::TestParamInfo<BadArgs>& p) { return std::string(p.param.name); });

TEST_F(CliTest, LemonadePortIsUsedWithoutAFlag) {
  LoopbackListener probe;
  ASSERT_TRUE(probe.is_open());
  const int wanted = probe.port();
  ASSERT_GT(wanted, 0);
  probe.close();
  RouterProcess& r =
      launch_router({"--llamacpp", "cpu"}, {{"LEMONADE_PORT", std::to_string(wanted)}});
  EXPECT_EQ(r.wait_listening(), wanted) << r.log_text();
  EXPECT_EQ(http_get(wanted, "/api/v1/health").status, 200);
}

TEST_F(CliTest, ThePortFlagBeatsLemonadePort) {
  LoopbackListener taken;  // the environment's port is busy: using it would fail
  ASSERT_TRUE(taken.is_open());
  ASSERT_GT(taken.port(), 0);
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_PORT", std::to_string(taken.port())}}));
  EXPECT_NE(port(), taken.port());
  EXPECT_EQ(http_get(port(), "/api/v1/health").status, 200);
}

class CtxSizeLayersTest : public RouterTest {
 protected:
  int loaded_ctx_size() {
    env_.add_llm("a");
    EXPECT_EQ(load(port(), "user.a").status, 200);
    auto options = loaded_field(health(port()), "user.a", "recipe_options");
    return options.is_object() ? options.value("ctx_size", -1) : -1;
  }
};

TEST_F(CtxSizeLayersTest, DefaultWithoutEnvOrFlag) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_EQ(loaded_ctx_size(), 4096);
}

TEST_F(CtxSizeLayersTest, EnvBeatsTheDefault) {
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_CTX_SIZE", "2500"}}));
  EXPECT_EQ(loaded_ctx_size(), 2500);
}

TEST_F(CtxSizeLayersTest, FlagBeatsEnv) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "3500"}, {{"LEMONADE_CTX_SIZE", "2500"}}));
  EXPECT_EQ(loaded_ctx_size(), 3500);
}

TEST_F(CliTest, MaxLoadedModelsFromEnvAndFlag) {
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_MAX_LOADED_MODELS", "3"}}));
  EXPECT_EQ(health(port())["max_models"]["llm"], 3);
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--max-loaded-models", "2"}, {{"LEMONADE_MAX_LOADED_MODELS", "3"}}));
  EXPECT_EQ(health(port())["max_models"]["llm"], 2);
}

TEST_F(CliTest, AcceptsEveryFlagLemonadePasses) {
  const std::string extra = env_.root() + "/extra-models";
  std::filesystem::create_directories(extra);
  env_.add_llm("a");
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--no-broadcast", "--sdcpp", "cpu", "--whispercpp", "cpu", "--steps", "5",
                    "--cfg-scale", "2.5", "--width", "256", "--height", "256", "--host",
                    "127.0.0.1", "--log-level", "debug", "--extra-models-dir", extra}));
  EXPECT_EQ(http_get(port(), "/api/v1/health").status, 200);
  EXPECT_EQ(chat(port(), "user.a").status, 200);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w"));
  EXPECT_EQ(loaded_field(health(port()), "user.w", "device"), "cpu");
  EXPECT_GT(router().count_log("debug"), 0) << "--log-level debug had no effect";
}

}  // namespace
}  // namespace lemon::testing
