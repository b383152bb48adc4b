// ProcessServer: the WrappedServer behaviour shared by every recipe that runs
// a child process: find the binary, pick a port, spawn with an argv, poll the
// health route (2 ms apart for the first 200 ms, then 20 ms, while watching
// the child) until --load-timeout, or until --load-stall-timeout passes with
// no sign of progress from a backend that reports its load (load_watch.h:
// each report and each other output line but health polls is one; then
// kBackendLoadStalled naming the last stage), stop with SIGTERM ->
// grace -> SIGKILL. Recipes supply only their command line, binary name,
// health path and routes (one subclass per recipe).
//
// Thread-safety: as WrappedServer.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lemon/backends/binary_locator.h"
#include "lemon/backends/load_watch.h"
#include "lemon/backends/wrapped_server.h"
#include "lemon/core/mutex.h"
#include "lemon/net/upstream_client.h"
#include "lemon/process/port_allocator.h"
#include "lemon/process/process_launcher.h"

namespace lemon {

// What every ProcessServer needs from the router process. Owned by the
// application; outlives every server.
struct BackendEnvironment {
  ProcessLauncher* launcher = nullptr;
  PortAllocator* ports = nullptr;
  std::chrono::milliseconds load_timeout{600'000};
  // How long a backend that reports its load may go without a sign of
  // progress (load_watch.h); zero: no stall bound.
  std::chrono::milliseconds load_stall_timeout{60'000};
  std::chrono::milliseconds stop_grace{5'000};
  std::string cache_dir;  // install dirs live in <cache_dir>/bin/<recipe>/<backend>
  // Where llama.cpp servers save their slots; "" keeps none.
  std::string slot_cache_dir;
  bool verbose = false;     // --log-level debug/trace: ask backends for verbose logs
  BinarySettings binaries;  // config.json's binary paths and search order
  // The router's own HTTP port, for backends that want to know their
  // router (llama-server's LLAMA_SERVER_ROUTER_PORT); 0 when unknown.
  int router_port = 0;
};

// The build a llama.cpp-family recipe's options select (its
// `<recipe>_backend` option: "vulkan", "rocm", ...); "cpu" when unset, for
// the command line and the device.
std::string backend_or_cpu(std::string_view recipe, const RecipeOptions& options);

class ProcessServer : public WrappedServer {
 public:
  ProcessServer(ModelInfo model, RecipeOptions options, Device device,
                const BackendEnvironment& env);
  ~ProcessServer() override;

  Status prepare() override;
  Status start(const std::function<bool()>& cancelled) override;
  void stop() override;
  bool exited() const override;
  std::string base_url() const override;
  std::optional<int> pid() const override;
  net::UpstreamClient& client() override;
  std::int64_t measured_rss() const override;
  std::vector<std::string> last_output(std::size_t n) const override;
  std::string exit_description() const override;
  std::vector<std::string> command_line() const override;

  // The full command line for `port` (argv[1..]). Pure; exposed for tests.
  virtual Result<std::vector<std::string>> build_args(int port) const = 0;

 protected:
  // Which binary to look for, and under which LEMONADE_*_BIN name.
  virtual BinaryQuery binary_query() const = 0;
  // The route polled for readiness (200 = ready).
  virtual std::string health_path() const = 0;
  // Extra environment for the child (e.g. LD_LIBRARY_PATH).
  virtual std::vector<std::pair<std::string, std::string>> child_env(
      const std::string& executable) const;
  // The environment of a backend shipped as a release folder: its shared
  // libraries next to the binary (LD_LIBRARY_PATH), and, with the recipe
  // option `gpu`, that GPU alone visible to the child (CUDA, HIP/ROCm and
  // Vulkan variables).
  std::vector<std::pair<std::string, std::string>> release_env(const std::string& executable) const;
  // The environment variables that hand this process's secret() to a
  // program that takes an API key: llama-server's
  // LLAMA_API_KEY. When there are any, every call to the backend carries the
  // secret as a bearer token. Default: none.
  virtual std::vector<std::pair<std::string, std::string>> secret_env() const;
  // This process's secret (backend_secret.h): made at construction and anew
  // for each spawn, before build_args(). A recipe whose program has no API
  // key may put it in its paths (whisper-server's --request-path). Set only
  // by start(), before the server is used.
  const std::string& secret() const { return secret_; }
  // The binary prepare() found ("" before).
  const std::string& executable() const { return executable_; }
  const BackendEnvironment& environment() const { return env_; }
  // Roles of the model whose resolved files must exist (default: "main").
  virtual std::vector<std::string> required_roles() const;
  // Whether the last output of a child that exited while loading says it ran
  // out of memory (then the load fails with kOutOfMemory, not
  // kBackendExited). Default: no backend-specific recognition.
  virtual bool output_reports_out_of_memory(const std::vector<std::string>& lines) const;

  bool verbose() const { return env_.verbose; }
  // What a recipe changes in its spawn (an input pipe, a hook on its output
  // lines). Called once per spawn, after build_args(). Default: nothing.
  virtual void adjust_spawn(SpawnSpec& spec);
  // Where a recipe whose backend reports its load marks each report
  // (LoadWatch::progress), from its spawn's line hook; shared with the
  // hook, which may outlive the server.
  const std::shared_ptr<LoadWatch>& load_watch() const { return load_watch_; }
  // Called by stop() before its signal, while the child runs: a program
  // that stops more cleanly on a command of its own gets it here, and may
  // wait up to --stop-grace for it to exit (then no signal is sent).
  // Default: nothing.
  virtual void ask_to_stop(ChildProcess& child);

 private:
  enum class ReadyOutcome { kReady, kExited, kTimedOut, kStalled, kCancelled, kPortTaken };
  // Until `started` + the load timeout, or the stall bound (load_deadline).
  ReadyOutcome wait_ready(ChildProcess& child, net::UpstreamClient& client,
                          std::chrono::steady_clock::time_point started,
                          const std::function<bool()>& cancelled) const;
  Error stalled_error(const ChildProcess& child) const;
  Error exited_error(const ChildProcess& child) const;

  // Shared with the child's exit callback, which may run on the monitor
  // thread after this object is gone: the callback never touches `this`, and
  // stop() waits for a callback that is already running (unless stop() runs
  // inside it).
  struct ExitWatch {
    Mutex mu;
    CondVar cv;
    bool stopping LEMON_GUARDED_BY(mu) = false;
    int running LEMON_GUARDED_BY(mu) = 0;  // callbacks in progress
    std::thread::id running_thread LEMON_GUARDED_BY(mu);
    std::function<void()> listener LEMON_GUARDED_BY(mu);
  };

  const BackendEnvironment& env_;
  std::string executable_;  // set by prepare()
  std::string secret_;      // see secret(); never logged
  std::shared_ptr<ExitWatch> exit_watch_ = std::make_shared<ExitWatch>();
  std::shared_ptr<LoadWatch> load_watch_ = std::make_shared<LoadWatch>();

  mutable Mutex mu_;
  std::shared_ptr<ChildProcess> child_ LEMON_GUARDED_BY(mu_);
  std::unique_ptr<net::UpstreamClient> client_;  // set once by start()
  int port_ LEMON_GUARDED_BY(mu_) = 0;
  std::vector<std::string> argv_ LEMON_GUARDED_BY(mu_);  // the running child's
};

}  // namespace lemon
