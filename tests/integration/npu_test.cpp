// NPU exclusivity (issue #2 §7.3): loading an NPU server evicts every other
// NPU server whatever its type, and nothing else.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using NpuTest = RouterTest;

const std::map<std::string, std::string> kFlmInstalled = {
    {"LEMON_FAKE_FLM_INSTALLED", "llama3.2:1b"}};

TEST_F(NpuTest, AnNpuWhisperModelEvictsTheFlmServerButNotACpuModel) {
  env_.add_llm("cpu");
  env_.add_flm("f", "llama3.2:1b");
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--max-loaded-models", "2", "--whispercpp", "npu"}, kFlmInstalled));
  pid_t cpu = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.cpu", &cpu));
  pid_t flm = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.f", &flm));
  ASSERT_GT(flm, 0);
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.cpu", "user.f"}));
  EXPECT_EQ(loaded_field(h, "user.f", "device"), "npu");
  EXPECT_EQ(loaded_field(h, "user.f", "type"), "llm");
  EXPECT_EQ(fake_state(loaded_field(h, "user.f", "backend_url"))["program"], "flm");

  PidWatch flm_watch(flm);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w"));
  h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.cpu", "user.w"}));
  EXPECT_EQ(loaded_field(h, "user.w", "device"), "npu");
  EXPECT_EQ(loaded_field(h, "user.w", "type"), "transcription") << "Lemonade 11's name";
  EXPECT_EQ(loaded_field(h, "user.cpu", "pid"), cpu);
  EXPECT_TRUE(flm_watch.wait_exit(kWait)) << "the flm server is still running";
  EXPECT_TRUE(router().wait_for_log("evicting 'user.f' (npu_exclusive)"));
}

TEST_F(NpuTest, ACpuWhisperModelLeavesTheFlmServerAlone) {
  env_.add_flm("f", "llama3.2:1b");
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router({"--whispercpp", "cpu"}, kFlmInstalled));
  pid_t flm = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.f", &flm));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w"));
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.f", "user.w"}));
  EXPECT_EQ(loaded_field(h, "user.w", "device"), "cpu");
  EXPECT_EQ(loaded_field(h, "user.f", "pid"), flm);
}

}  // namespace
}  // namespace lemon::testing
