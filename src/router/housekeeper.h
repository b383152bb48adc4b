// Housekeeper: the router's timed decisions, on a thread of its own. It
// wakes every housekeeping_interval (and when rung: a request with
// keep_alive 0 ended, the settings changed) and, over a snapshot of the
// table:
// - memory (each --memory-poll-interval): measures each server's RSS,
//   reads every device, and unloads idle servers on a device another
//   program squeezed (plan_pressure_relief), and, with --auto-evict, the
//   least recently used idle model when a GPU is fuller than its threshold;
// - default models: queues the loads DefaultModels says are due;
// - options: a model whose load options a new CLI layer changes is
//   reloaded once idle (reload_when_idle);
// - the pool (plan_pool): a scale-up becomes a replica job on the loader's
//   queue; scale-downs and expired keep-alives are retired, sparing a
//   server a session was pinned to meanwhile.
// Decisions are pure functions; the housekeeper acts through the table,
// the queue and the Retirer with no lock of theirs held.
//
// Owns: the scale-ups under way (and those blocked after a failure) per
// model, behind its lock (a leaf: a replica job's outcome arrives on the
// loader thread); which servers' options it found current or stale
// (housekeeper thread only).
//
// Thread-safety: constructed and joined by the Router; everything else
// runs on its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "default_models.h"
#include "doorbell.h"
#include "lemon/core/mutex.h"
#include "lemon/router/router.h"
#include "live_settings.h"
#include "load_queue.h"
#include "memory_readings.h"
#include "retirer.h"
#include "server_table.h"

namespace lemon {

struct HousekeeperParts {
  const RouterConfig& config;
  const ModelResolver& models;
  LiveSettings& settings;
  ServerTable& table;
  LoadQueue& queue;
  Retirer& retirer;
  DefaultModels& defaults;
  MemoryReadings& readings;
  Doorbell& bell;  // it waits on it
  const std::atomic<bool>& stopping;
};

class Housekeeper {
 public:
  explicit Housekeeper(const HousekeeperParts& parts);  // starts its thread
  ~Housekeeper();                                       // join()
  Housekeeper(const Housekeeper&) = delete;
  Housekeeper& operator=(const Housekeeper&) = delete;

  // Returns once its thread ended (after `stopping` and a ring).
  void join();

  // Router::relieve_pressure's contract; any thread may call it.
  std::vector<std::string> relieve_pressure(double used_fraction);

 private:
  struct ScaleUp {
    bool running = false;                                   // a replica job is queued or running
    std::chrono::steady_clock::time_point blocked_until{};  // one could not start
  };

  void loop();
  void watch_memory();
  void load_defaults();
  // Models published with an older CLI layer: current, or stale (then
  // reloaded once idle by reload_stale()).
  void check_options();
  void reload_stale();
  // plan_pool over the table: scale up, scale down, keep-alive.
  void tend_pool();
  // A replica job's outcome (on the loader thread).
  void replica_finished(const std::string& model, const Status& result) LEMON_EXCLUDES(mu_);

  const HousekeeperParts parts_;
  Mutex mu_;
  std::map<std::string, ScaleUp> scale_ups_ LEMON_GUARDED_BY(mu_);
  // Housekeeper thread only: by server id (a model's first replica), the
  // CLI generation its options were last found current for, and the
  // servers whose options are stale.
  std::map<std::uint64_t, std::uint64_t> current_for_;
  std::set<std::uint64_t> stale_;
  std::thread thread_;
};

}  // namespace lemon
