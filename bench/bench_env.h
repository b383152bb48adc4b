// The processes a benchmark needs: a temp dir with model files and
// user_models.json, the lemonade-router binary on a free port, and fake (or
// real) backends started directly for the "direct" baseline. Everything is
// spawned with lemon's own ProcessLauncher and killed at the end.
//
// Thread-safety: set up and tear down from one thread; the accessors are
// read-only afterwards.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/net/upstream_client.h"
#include "lemon/process/process_launcher.h"

namespace bench {

// llama.cpp slots per model in every scenario: the most concurrent one (64).
inline constexpr int kBenchSlots = 64;

struct Paths {
  std::string router;        // lemonade-router binary
  std::string fakes_dir;     // directory with the fake llama-server
  std::string llama_server;  // backend binary for llamacpp models (fake or real)
  std::string model_file;    // GGUF for every model (a placeholder for the fake)
};

class BenchEnv {
 public:
  explicit BenchEnv(Paths paths);
  ~BenchEnv();

  const Paths& paths() const { return paths_; }

  // Registers user.<name> (llamacpp) pointing at `file` (default: the
  // model file), with one label ("embeddings", "reranking") if not empty.
  void add_model(const std::string& name, const std::string& file = {},
                 const std::string& label = {});

  // Starts a router with these extra arguments (and environment); returns
  // its port.
  int start_router(const std::vector<std::string>& args,
                   const std::vector<std::pair<std::string, std::string>>& env = {});

  // Starts the fake hub (fake-hub in the fakes dir) over `root`; returns its
  // port.
  int start_fake_hub(const std::string& root);
  void stop_fake_hub();
  // Runs `executable args...` to its end; returns its exit code (-1 if it
  // could not start or was killed).
  int run_to_end(const std::string& executable, const std::vector<std::string>& args);
  const std::string& root() const { return root_; }
  void stop_router();
  int router_port() const { return router_port_; }
  pid_t router_pid() const;
  std::vector<std::string> router_log(std::size_t n) const;

  // Starts the backend binary directly (the "direct" baseline); returns its port.
  // `slots`: llama.cpp's --parallel (and the context it needs).
  int start_direct_backend(int slots = kBenchSlots);
  void stop_direct_backend();

  // The backend's own start and stop, without the router (the baseline of
  // the model switch, issue #27): from spawning it with a model to its
  // health answering 200, and from its SIGTERM to its exit, in ms.
  struct StartStop {
    double start_ms = 0;
    double stop_ms = 0;
  };
  StartStop time_direct_start_stop();

 private:
  int free_port() const;
  void wait_ready(int port, const std::string& path, lemon::ChildProcess& child) const;
  // Spawns `spec` and waits until `ready_path` answers 200 on `port`.
  std::shared_ptr<lemon::ChildProcess> spawn_ready(const lemon::SpawnSpec& spec, int port,
                                                   const std::string& ready_path);
  static void stop(std::shared_ptr<lemon::ChildProcess>& child);

  Paths paths_;
  std::string root_;
  nlohmann::json models_ = nlohmann::json::object();
  std::unique_ptr<lemon::ProcessLauncher> launcher_;
  std::shared_ptr<lemon::ChildProcess> router_;
  std::shared_ptr<lemon::ChildProcess> direct_;
  std::shared_ptr<lemon::ChildProcess> hub_;
  int router_port_ = 0;
};

// Resident set size of a process in KiB (VmRSS), or -1.
long rss_kib(pid_t pid);
// User + system CPU time of a process in seconds, or -1.
double cpu_seconds(pid_t pid);
// CLOCK_MONOTONIC in ns (the clock the fakes stamp chunks with).
long long mono_ns();

// GET a JSON document from 127.0.0.1:port.
nlohmann::json get_json(int port, const std::string& path);
// POST a JSON document; returns the status code.
int post_json(int port, const std::string& path, const nlohmann::json& body);

}  // namespace bench
