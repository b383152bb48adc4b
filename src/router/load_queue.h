// LoadQueue: the loads waiting to run and the loader thread that runs them,
// one at a time. Owns the queue (FIFO, with LoadScheduler::next's fairness
// and priorities), the job running now, the models whose loads are blocked
// (a delete in progress) and the cooldown of models whose loads keep
// failing. Internal to src/router.
//
// What it promises:
// - Callers of one model share one job: acquire() and load() join a queued
//   or running load of the same model (and, for load(), options).
// - A job's waiters are granted in the step that publishes its server
//   (publish(): the table's publication and their leases happen under this
//   queue's lock and the table's, nested), so a waiter either gets a lease
//   on the new server, a place in its line, or the load's error.
// - Decisions are made when a job leaves the queue, over a snapshot of the
//   table as it is then; a job's steps are LoadScheduler::run with
//   JobEffects, on the loader thread, with no lock held.
//
// Lock order: this queue's lock, then the ServerTable's, then leaf locks
// (WaitQuota, ViewBoard, DefaultModels, LiveSettings, Doorbell). Waits on
// this queue's lock (a caller waiting for its job) hold no other lock; the
// loader thread waits on its Doorbell, holding none.
//
// Thread-safety: every public method from any thread, without the table's
// lock; publish(), serve_loaded(), standing() and failed_after_evict_all()
// are JobEffects' (the loader thread).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "default_models.h"
#include "doorbell.h"
#include "lemon/backends/server_factory.h"
#include "lemon/core/mutex.h"
#include "lemon/router/load_cooldown.h"
#include "lemon/router/router.h"
#include "live_settings.h"
#include "load_job.h"
#include "memory_readings.h"
#include "server_table.h"
#include "view_board.h"
#include "wait_quota.h"

namespace lemon {

class Retirer;

// What the loader works with besides its queue.
struct LoaderParts {
  const RouterConfig& config;
  const ModelResolver& models;
  ServerFactory& factory;
  LiveSettings& settings;
  ServerTable& table;
  Retirer& retirer;
  DefaultModels& defaults;
  MemoryReadings& readings;
  ViewBoard& board;
  Doorbell& bell;                   // the loader waits on it
  std::atomic<bool>& loads_queued;  // the queue holds loads (the table reads it)
  const std::atomic<bool>& stopping;
};

// What a load gave a caller of acquire(): the lease granted with its
// publication; or a ticket in `model`'s line (its slots were all taken);
// or neither: the model was loaded or queued meanwhile, look again.
struct LoadWait {
  std::optional<Lease> lease;
  std::string model;
  std::uint64_t ticket = 0;
};

// A job's standing as its load applies it.
struct JobStanding {
  bool pinned = false;
  int priority = 0;
};

class LoadQueue {
 public:
  explicit LoadQueue(const LoaderParts& parts);  // starts the loader thread
  ~LoadQueue();                                  // join()
  LoadQueue(const LoadQueue&) = delete;
  LoadQueue& operator=(const LoadQueue&) = delete;

  // acquire()'s load of `model`, which no server serves: joins a queued or
  // running load of it, or queues one (counted in `place`), and waits for
  // it. Errors: the load's, kModelNotFound and the other make_load_job()
  // refusals, kConflict (blocked), the cooldown's, kQueueFull, kCancelled.
  Result<LoadWait> await_load(std::string_view model, std::optional<ModelType> required,
                              std::optional<KeepAlive> keep_alive, WaitQuota::Place& place,
                              const WaitHooks& hooks) LEMON_EXCLUDES(mu_);
  // Router::load's contract, for `job` (made by make_load_job).
  Status load(std::shared_ptr<LoadJob> job, const LoadStanding& standing, const WaitHooks& hooks)
      LEMON_EXCLUDES(mu_);
  // Router::block_loads: new loads of `model` fail with kConflict until
  // as many unblock() calls as block() calls.
  void block(std::string_view model) LEMON_EXCLUDES(mu_);
  void unblock(const std::string& model) LEMON_EXCLUDES(mu_);

  // The housekeeper's loads (a scale-up, a default model, an options
  // reload): queued without waiters. False, queuing nothing, while shutting
  // down or, for a model's own load, while its loads are blocked.
  // `detail` goes with the kLoadQueued event (a scale-up reports none).
  bool enqueue(const std::shared_ptr<LoadJob>& job, const char* detail) LEMON_EXCLUDES(mu_);
  // A load is queued or running.
  bool pending() const LEMON_EXCLUDES(mu_);
  // A load of `model` is queued or running, or its loads are blocked.
  bool queued_or_blocked(std::string_view model) const LEMON_EXCLUDES(mu_);

  // JobEffects: grants `job`'s waiters on the loaded servers of its model
  // (of its options, for an explicit load); false when none serves.
  bool serve_loaded(LoadJob& job) LEMON_EXCLUDES(mu_);
  // Publishes `slot` with `job`'s standing and grants its waiters;
  // `saved_slots` are held for their restore by the returned leases. Null
  // when the table refused it (nothing changed).
  std::optional<std::vector<Lease>> publish(LoadJob& job, const std::shared_ptr<ServerSlot>& slot,
                                            std::vector<int> saved_slots) LEMON_EXCLUDES(mu_);
  // `job`'s standing; when `loaded` (its model as loaded now) is given, a
  // pin or priority the load did not name is inherited from it first.
  JobStanding standing(LoadJob& job, const GroupState* loaded) LEMON_EXCLUDES(mu_);
  // The model's last load failed even after everything was evicted, and
  // nothing reset that since (read when asked: a POST /load joining the job
  // meanwhile resets it).
  bool failed_after_evict_all(const std::string& model) const LEMON_EXCLUDES(mu_);

  // Shutdown: fails every queued load with kShuttingDown; then join() waits
  // for the loader, whose running load ends at its next step.
  void fail_queued() LEMON_EXCLUDES(mu_);
  void join();

 private:
  void loader_loop() LEMON_EXCLUDES(mu_);
  // The next job the loader may start now (fairness), or null; `until`
  // tells when to look again.
  std::shared_ptr<LoadJob> next_job(std::chrono::steady_clock::time_point& until)
      LEMON_REQUIRES(mu_);
  std::shared_ptr<LoadJob> find_job(std::string_view model,
                                    const std::optional<RecipeOptions>& options) const
      LEMON_REQUIRES(mu_);
  // With the lock released, reports `job` (kLoadQueued when `created`,
  // else kLoadJoined); then lets the loader start a created one. Its
  // waiters are registered first, so their outcome is kept meanwhile.
  void report_and_announce(LoadJob& job, bool created, const char* detail) LEMON_REQUIRES(mu_);
  Status wait_for_job(MutexLock& lock, const std::shared_ptr<LoadJob>& job,
                      const std::shared_ptr<LoadWaiter>& waiter, const WaitHooks& hooks)
      LEMON_REQUIRES(mu_);
  // Ends `job`: its lease-wanting waiters get `grants` in order, or, with
  // none, the error of `result`.
  void finish_job(LoadJob& job, const Status& result, std::vector<Grant> grants = {})
      LEMON_REQUIRES(mu_);
  // The cooldown after `job` ended with `result` (a rest may add Retry-After).
  void record_outcome(const LoadJob& job, Status& result) LEMON_REQUIRES(mu_);
  Status run(LoadJob& job) LEMON_EXCLUDES(mu_);
  // Publishes the loads under way and whether any is queued.
  void republish() LEMON_REQUIRES(mu_);

  const LoaderParts parts_;
  mutable Mutex mu_;
  CondVar finished_;  // a job finished (its waiters may return)
  std::deque<std::shared_ptr<LoadJob>> queue_ LEMON_GUARDED_BY(mu_);
  std::shared_ptr<LoadJob> current_ LEMON_GUARDED_BY(mu_);
  std::multiset<std::string, std::less<>> blocked_ LEMON_GUARDED_BY(mu_);
  LoadCooldown cooldown_ LEMON_GUARDED_BY(mu_);
  std::thread loader_;
};

}  // namespace lemon
