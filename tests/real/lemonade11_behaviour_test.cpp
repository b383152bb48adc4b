// Lemonade 11's behaviours against a real llama-server (LEMON_REAL_LLAMA_SERVER):
// a non-streaming request whose server was killed before it answered is sent
// again to the server loaded in its place, which keeps the pin; and
// extra_models_dir, set while the router runs, serves its files at once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/process_signal.h"
#include "support/process_watch.h"
#include "support/test_env.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class RealLemonade11Test : public RealLlamaTest {};

TEST_F(RealLemonade11Test, AKilledServerUnderANonStreamingRequestIsReloadedPinnedAndAnswers) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  // One slot with the whole context on one thread: the answer below takes
  // about a second of generation, the window in which the server is killed.
  HttpReply loaded = load(
      port(), "user.tiny",
      {{"pinned", true}, {"ctx_size", 4096}, {"parallel", 1}, {"llamacpp_args", "--threads 1"}});
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  const int first = loaded_pid(port(), "user.tiny");
  ASSERT_GT(first, 0) << health(port()).dump();
  PidWatch first_watch(first);

  HttpReply answer;
  std::thread client([&] { answer = chat(port(), "user.tiny", {{"max_tokens", 1500}}); });
  const bool busy =
      eventually([&] { return loaded_field(health(port()), "user.tiny", "is_busy") == true; });
  if (busy) {
    EXPECT_NO_FATAL_FAILURE(signal_process(first, SIGKILL));
  }
  client.join();
  ASSERT_TRUE(busy) << "the request never reached the model";
  EXPECT_TRUE(first_watch.wait_exit(kWait));

  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.json()["object"], "chat.completion") << answer.body;
  EXPECT_EQ(
      router().count_log("sending the request once more") + router().count_log("did not answer"), 1)
      << router().log_text();
  const json h = health(port());
  const json again = loaded_field(h, "user.tiny", "pid");
  ASSERT_TRUE(again.is_number()) << h.dump();
  EXPECT_NE(again.get<int>(), first) << "answered by the server loaded again";
  EXPECT_EQ(loaded_field(h, "user.tiny", "pinned"), true) << "the pin survives the crash";
  EXPECT_NE(command_line(again.get<int>()).find("--threads 1"), std::string::npos)
      << "loaded again with the options it had: " << command_line(again.get<int>());
}

TEST_F(RealLemonade11Test, AnExtraModelsDirSetWhileRunningIsServedAtOnce) {
  const std::filesystem::path dir = env_.root() + "/extra-models";
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink(real_model_file("tiny-llama-chat.gguf"), dir / "tiny.gguf");
  env_.write_config(json::object());
  ASSERT_NO_FATAL_FAILURE(start_real_router({}, env_.config_env()));
  EXPECT_EQ(http_get(port(), "/api/v1/models/extra.tiny.gguf").status, 404);

  HttpReply set = http_post(port(), "/internal/set", json{{"extra_models_dir", dir.string()}});
  ASSERT_EQ(set.status, 200) << set.body;
  HttpReply listed = http_get(port(), "/api/v1/models/extra.tiny.gguf");
  ASSERT_EQ(listed.status, 200) << listed.body;
  HttpReply r = chat(port(), "extra.tiny", {{"max_tokens", 4}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length") << r.body;
  const int pid = loaded_pid(port(), "extra.tiny.gguf");
  ASSERT_GT(pid, 0) << health(port()).dump();
  EXPECT_NE(command_line(pid).find("tiny.gguf"), std::string::npos) << command_line(pid);

  ASSERT_EQ(http_post(port(), "/internal/set", json{{"extra_models_dir", nullptr}}).status, 200);
  EXPECT_EQ(http_get(port(), "/api/v1/models/extra.tiny.gguf").status, 404) << "gone again";
}

}  // namespace
}  // namespace lemon::testing
