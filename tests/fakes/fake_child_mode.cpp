#include "fake_child_mode.h"

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include "fake_runtime.h"

namespace fake {
namespace {

std::mutex g_mu;
std::condition_variable g_cv;
bool g_monitoring = false;    // the stdin monitor runs (the model loaded)
bool g_exit_command = false;  // it read the exit command

void write_state(const std::string& state, const json& payload) {
  std::printf("cmd_child_to_router:state:%s\n",
              dump(json{{"state", state}, {"payload", payload}}).c_str());
  std::fflush(stdout);
}

// llama-server's stdin monitor (server_child::setup).
void monitor_stdin() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find("cmd_router_to_child:exit") != std::string::npos) {
      std::printf("srv    operator(): exit command received, exiting...\n");
      std::fflush(stdout);
      {
        std::lock_guard lock(g_mu);
        g_exit_command = true;
      }
      g_cv.notify_all();
      request_shutdown();  // the clean shutdown a signal starts
      return;
    }
  }
  std::printf("srv    operator(): EOF on stdin detected, forcing shutdown...\n");
  std::fflush(stdout);
  std::_Exit(1);
}

}  // namespace

bool child_mode_requested() {
  return std::getenv("LLAMA_SERVER_ROUTER_PORT") != nullptr;
}

void enable_child_mode(json info, bool has_mmproj) {
  Runtime& rt = runtime();
  json stages = json::array({"text_model"});
  if (has_mmproj) {
    stages.push_back("mmproj_model");
  }
  rt.on_load_progress = [stages](double value) {
    write_state("loading", {{"stages", stages}, {"current", "text_model"}, {"value", value}});
  };
  rt.on_loaded = [info = std::move(info), has_mmproj] {
    if (has_mmproj) {
      write_state("loading", {{"stage", "mmproj_model"}});
    }
    {
      std::lock_guard lock(g_mu);
      g_monitoring = true;
    }
    std::printf(
        "srv    operator(): child server monitoring thread started, waiting for EOF on "
        "stdin...\n");
    std::thread(monitor_stdin).detach();
    write_state("ready", info);
  };
  // The real server joins its monitor thread before it exits.
  rt.before_exit = [] {
    std::unique_lock lock(g_mu);
    g_cv.wait(lock, [] { return !g_monitoring || g_exit_command; });
  };
}

}  // namespace fake
