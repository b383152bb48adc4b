// The daemon's shutdown. SIGINT, SIGTERM and SIGHUP are
// blocked in every thread and taken by one thread. SIGHUP calls the reload
// hook (the configuration is read again) and the router goes
// on. SIGINT and SIGTERM drain: downloads
// are cancelled at once (a pull resumes where it stopped), the HTTP server
// stops accepting, in-flight requests (streams included) may finish for up
// to --drain-timeout, then every backend is stopped, which ends what is left
// (streams get an SSE error event and [DONE]). A second signal skips the
// rest of the drain.
//
// Thread-safety: construct ShutdownSignals on the main thread before any
// other thread starts; GracefulDrain's methods are for the main thread.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "lemon/backends/backend_installer.h"
#include "lemon/http/api_server.h"
#include "lemon/models/model_store.h"
#include "lemon/router/router.h"
#include "lemon/telemetry/context_monitor.h"

namespace lemon {

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, so that every
// thread started after it inherits the mask, and ignores SIGPIPE.
class ShutdownSignals {
 public:
  ShutdownSignals();
  const sigset_t& set() const { return set_; }

 private:
  sigset_t set_;
};

// What a shutdown stops, in this order. Each outlives the GracefulDrain.
struct DrainTargets {
  ModelStore& store;
  BackendInstaller& installer;
  http::ApiServer& api;
  telemetry::ContextMonitor& context;
  Router& router;
};

class GracefulDrain {
 public:
  // Starts the thread that waits for a signal.
  // `on_reload` runs on the signal thread for each SIGHUP before a drain.
  GracefulDrain(const ShutdownSignals& signals, DrainTargets targets,
                std::chrono::milliseconds timeout, std::function<void()> on_reload = {});
  // Call once api.run() has returned: waits for the drain if a signal
  // started it (it ends within 100 ms of the last request), else leaves the
  // signal thread to exit() (the server stopped for another reason); then
  // stops whatever is still running.
  void finish();
  ~GracefulDrain();

  GracefulDrain(const GracefulDrain&) = delete;
  GracefulDrain& operator=(const GracefulDrain&) = delete;

 private:
  void drain();
  void stop_everything();

  sigset_t signals_;
  DrainTargets targets_;
  std::chrono::milliseconds timeout_;
  std::function<void()> on_reload_;
  std::atomic<bool> signalled_{false};
  std::thread thread_;
};

}  // namespace lemon
