// A real llama-server on its own, not started by the router, as a remote
// model's endpoint (issue #30 §3): the health check finds its /v1/health or
// /v1/models, chats and streams pass through with the model named as it
// knows it, and once it is gone the endpoint is down and the client told so.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/loopback_listener.h"
#include "support/process_signal.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

// A port nothing listens on now (the kernel's choice for a bound socket).
int unused_port() {
  LoopbackListener taken;
  const int port = taken.port();
  taken.close();
  return port;
}

// llama-server serving the tiny chat model on `port`, stopped with the test.
class StandaloneLlama {
 public:
  StandaloneLlama(const std::string& program, int port) : port_(port) {
    std::vector<std::string> argv = {program,
                                     "-m",
                                     real_model_file("tiny-llama-chat.gguf"),
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     std::to_string(port),
                                     "-c",
                                     "512"};
    std::vector<char*> args;
    for (auto& a : argv) {
      args.push_back(a.data());
    }
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  ~StandaloneLlama() { stop(); }
  StandaloneLlama(const StandaloneLlama&) = delete;
  StandaloneLlama& operator=(const StandaloneLlama&) = delete;

  bool ready() const {
    return pid_ > 0 && eventually([&] { return url_get(base(), "/health").status == 200; },
                                  std::chrono::seconds(60));
  }
  void stop() {
    if (pid_ > 0) {
      try_signal_process(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  pid_t pid_ = -1;
};

class RealRemoteTest : public RealLlamaTest {};

json endpoint_of(int router_port, const std::string& model) {
  const json h = health(router_port);
  for (const auto& m : h["remote_models"]) {
    if (m["model_name"] == model) {
      return m["endpoints"][0];
    }
  }
  return nullptr;
}

TEST_F(RealRemoteTest, ALlamaServerOnItsOwnIsARemoteEndpoint) {
  StandaloneLlama llama(program_, unused_port());
  ASSERT_TRUE(llama.ready()) << "llama-server did not start";
  env_.write_config(
      {{"remote",
        {{"health_interval", 0.2},
         {"models",
          {{"far",
            {{"checkpoint", "tiny-llama-chat"},
             {"endpoints", json::array({{{"base_url", llama.base() + "/v1"}}})}}}}}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  ASSERT_TRUE(eventually([&] { return endpoint_of(port(), "user.far")["state"] == "healthy"; }))
      << health(port()).dump();

  HttpReply r = chat(port(), "user.far", {{"max_tokens", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["message"]["role"], "assistant");
  EXPECT_GT(r.json()["usage"]["completion_tokens"].get<int>(), 0) << r.body;
  json stream = {{"model", "user.far"},
                 {"stream", true},
                 {"max_tokens", 3},
                 {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  HttpReply s = http_post(port(), "/v1/chat/completions", stream);
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_NE(s.body.find("data: [DONE]"), std::string::npos) << s.body;
  EXPECT_TRUE(health(port())["all_models_loaded"].empty()) << "nothing was loaded here";

  llama.stop();
  HttpReply gone = chat(port(), "user.far", {{"max_tokens", 3}});
  EXPECT_EQ(gone.status, 503) << gone.body;
  EXPECT_EQ(endpoint_of(port(), "user.far")["state"], "down");
}

}  // namespace
}  // namespace lemon::testing
