// A readiness probe is trusted only when our own child owns the port
// (process/socket_owner.h). Regression for two routers adopting each other's
// backends: the allocator here hands out a port another server already
// listens on, as happens when someone takes it between the check and the
// child's bind.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "lemon/backends/llamacpp_server.h"
#include "lemon/process/socket_owner.h"
#include "support/loopback_listener.h"
#include "support/scoped_env.h"
#include "support/taken_first_ports.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using testing::LoopbackListener;
using testing::ScopedEnv;
using testing::TakenFirstPorts;
using testing::TempDir;

TEST(SocketOwner, FindsTheListeningProcess) {
  LoopbackListener l;
  ASSERT_TRUE(l.is_open());
  EXPECT_TRUE(process_listens_on(::getpid(), l.port()));
  EXPECT_FALSE(process_listens_on(1, l.port()));
}

TEST(SocketOwner, NothingListeningMeansNoOwner) {
  int port = 0;
  {
    LoopbackListener l;
    ASSERT_TRUE(l.is_open());
    port = l.port();
  }
  EXPECT_FALSE(process_listens_on(::getpid(), port));
}

TEST(PortConflict, AProbeAnsweredByAnotherProgramIsNotTrusted) {
  TempDir dir("lemon-port");
  fs::path gguf = dir.write("m.gguf", "GGUF");
  const std::string fake = std::string(LEMON_FAKES_DIR) + "/llama-server";

  auto launcher = make_posix_process_launcher();
  // The intruder: a healthy server of someone else's on the port we will be
  // handed first.
  PortAllocator intruder_ports(21000);
  auto intruder_port = intruder_ports.acquire();
  ASSERT_TRUE(intruder_port.ok());
  SpawnSpec intruder;
  intruder.executable = fake;
  intruder.args = {"-m", gguf.string(), "--port", std::to_string(*intruder_port)};
  auto other = launcher->spawn(intruder);
  ASSERT_TRUE(other.ok()) << other.error().message();
  {
    net::UpstreamClient probe("127.0.0.1", *intruder_port);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!(probe.probe("/health", std::chrono::milliseconds(500)).value_or(0) == 200) &&
           !(*other)->wait_exit_until(std::min(
               deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)))) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "intruder never became ready";
    }
  }

  TakenFirstPorts ports(20000, *intruder_port);
  BackendEnvironment env;
  env.launcher = launcher.get();
  env.ports = &ports;
  env.load_timeout = std::chrono::seconds(20);
  env.stop_grace = std::chrono::milliseconds(500);
  ScopedEnv vars;
  vars.set("LEMONADE_LLAMACPP_CPU_BIN", fake);
  ModelInfo model;
  model.name = "m";
  model.recipe = "llamacpp";
  model.checkpoints["main"] = gguf.string();
  model.resolved_paths["main"] = gguf.string();
  model.downloaded = true;
  auto options = RecipeOptions::from_json("llamacpp", {{"llamacpp_backend", "cpu"}});
  ASSERT_TRUE(options.ok());
  LlamaCppServer server(model,
                        options->inherit(RecipeOptions::defaults()).restricted_to("llamacpp"), env);
  ASSERT_TRUE(server.prepare().ok());
  Status started = server.start({});
  ASSERT_TRUE(started.ok()) << started.error().message();
  // It must not have adopted the intruder.
  EXPECT_NE(server.base_url(), "http://127.0.0.1:" + std::to_string(*intruder_port));
  ASSERT_TRUE(server.pid().has_value());
  EXPECT_NE(*server.pid(), (*other)->pid());
  EXPECT_TRUE(process_listens_on(*server.pid(), server.client().port()));
  server.stop();
  (*other)->terminate(std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace lemon
