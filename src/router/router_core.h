// RouterCore: the Router's state, its lock and its two threads (the loader
// and the housekeeper). Internal to src/router: Router
// (lemon/router/router.h) forwards every public call here, and states the
// contract. Request-facing acquisition is in router_acquire.cpp, the loader
// in router_loader.cpp, the housekeeper in router_housekeeper.cpp.
//
// Thread-safety: as Router's. Every field the lock guards says so
// (LEMON_GUARDED_BY); the records it reaches through them (ModelGroup,
// ServerSlot, LoadJob) follow the same lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/router/default_model_policy.h"
#include "lemon/router/pool_policy.h"
#include "lemon/router/router.h"
#include "model_group.h"

namespace lemon {

// kSlotsPinned for `model`, which could load only if the `pinned` models
// made room in `room` (a type's slots, or a device's memory).
Error pinned_error(const std::string& model, const std::string& room,
                   const std::vector<std::string>& pinned);

// kSlotsPinned for `model` of `priority`, which could load only if the
// `outranking` models, of a higher priority, made room on the NPU.
Error outranked_error(const std::string& model, int priority,
                      const std::vector<std::string>& outranking);

// Why servers stop: planned by the router (eviction, keep-alive, scale-down,
// memory, recovery), or an explicit unload, the one thing that stops a
// pinned model.
enum class StopCause { kPlanned, kExplicitUnload };

class RouterCore {
 public:
  RouterCore(const ModelResolver& models, ServerFactory& factory, RouterConfig config);
  ~RouterCore();  // shutdown()
  RouterCore(const RouterCore&) = delete;
  RouterCore& operator=(const RouterCore&) = delete;

  // Router's public calls, with the contract lemon/router/router.h states.
  Result<Lease> acquire(std::string_view model_name, const WaitHooks& hooks = {},
                        std::optional<ModelType> required = std::nullopt,
                        std::optional<KeepAlive> keep_alive = std::nullopt);
  Result<Lease> acquire_server(std::uint64_t server_id, int backend_slot = -1,
                               const WaitHooks& hooks = {});
  bool pin_backend_slot(std::uint64_t server_id, int backend_slot);
  // A lease on `backend_slot` of a just-published server while its saved
  // slot is restored (nullopt when it has no such slot).
  std::optional<Lease> hold_for_restore(const std::shared_ptr<ServerSlot>& slot, int backend_slot)
      LEMON_REQUIRES(mu_);
  void unpin_backend_slot(std::uint64_t server_id, int backend_slot);
  Status load(std::string_view model_name, const RecipeOptions& request_options,
              const WaitHooks& hooks = {}, const LoadStanding& standing = {});
  Status unload(std::string_view model_name);
  Status set_pinned(std::string_view model_name, bool pinned);
  void forget_saved_slots(const std::string& model) {
    if (config_.slot_store != nullptr) {
      config_.slot_store->forget(model);
    }
  }
  long long saved_slot_bytes(const std::string& model) const {
    return config_.slot_store != nullptr ? config_.slot_store->saved_bytes(model) : 0;
  }
  // Router::block_loads(): new loads of `model_name` fail with kConflict
  // until as many unblock_loads() calls as block_loads() calls.
  void block_loads(std::string_view model_name);
  void unblock_loads(const std::string& model_name);
  void unload_all();
  std::vector<LoadedServerInfo> loaded() const;
  std::map<std::string, std::int64_t> keep_alive_expiries() const;
  std::shared_ptr<const RouterView> view() const;
  std::optional<LoadedServerInfo> most_recently_loaded() const;
  std::vector<DeviceMemoryInfo> memory_report() const;
  RecipeOptions cli_options() const;
  void apply_live_settings(const LiveRouterSettings& settings);
  void shutdown();

 private:
  friend class Lease;
  struct LoadWaiter;
  struct LoadJob;
  struct QueuePlace;
  struct HousekeepingWork;

  static Error blocked_error(std::string_view model);
  void release(ServerSlot& slot, int backend_slot);
  void touch(ServerSlot& slot) LEMON_REQUIRES(mu_);
  // The job's kLoadQueued event is out: the loader may start it.
  void announce(LoadJob& job) LEMON_REQUIRES(mu_);
  std::shared_ptr<LoadJob> find_job(std::string_view model,
                                    const std::optional<RecipeOptions>& options) const
      LEMON_REQUIRES(mu_);
  // After a change of the CLI layer: marks the models whose options it
  // changes, and queues a reload of each marked one that is idle. Called
  // by the housekeeper with mu_ held; releases it around the catalogue.
  void reload_changed_options() LEMON_REQUIRES(mu_);
  Result<std::shared_ptr<LoadJob>> make_job(std::string_view model_name,
                                            const std::optional<RecipeOptions>& request_options,
                                            std::optional<ModelType> required = std::nullopt)
      LEMON_EXCLUDES(mu_);
  // One step of a wait on cv_: until notified or, when the hooks poll the
  // caller, until next_tick, when they run without the lock. True when the
  // caller is gone.
  bool wait_step(MutexLock& lock, const WaitHooks& hooks,
                 std::chrono::steady_clock::time_point& next_tick) LEMON_REQUIRES(mu_);
  Status wait_for_job(MutexLock& lock, const std::shared_ptr<LoadJob>& job,
                      const std::shared_ptr<LoadWaiter>& waiter, const WaitHooks& hooks)
      LEMON_REQUIRES(mu_);
  // Waits in `model`'s line with `ticket` until it is first and a replica
  // has a free slot (that replica, in_flight counted: lease it) or the model
  // stops serving (null: start over). Errors: kCancelled, kShuttingDown.
  Result<std::shared_ptr<ServerSlot>> wait_for_slot(MutexLock& lock, const std::string& model,
                                                    std::uint64_t ticket, const WaitHooks& hooks)
      LEMON_REQUIRES(mu_);
  // Joins `model`'s line with a new ticket.
  std::uint64_t join_line(ModelGroup& group) LEMON_REQUIRES(mu_);
  // Counts a lease on `slot` and applies the request's keep_alive.
  Lease grant(const std::shared_ptr<ServerSlot>& slot, std::optional<KeepAlive> keep_alive)
      LEMON_REQUIRES(mu_);
  // The server with this id in the table, or null.
  std::shared_ptr<ServerSlot> find_server(std::uint64_t server_id) const LEMON_REQUIRES(mu_);
  std::optional<Error> queue_refusal(std::string_view model) const LEMON_REQUIRES(mu_);

  // Loader thread.
  void loader_loop();
  // The next job the loader may start now (fairness), or null; `until`
  // tells when to look again.
  std::shared_ptr<LoadJob> next_job(std::chrono::steady_clock::time_point& until)
      LEMON_REQUIRES(mu_);
  // A load's steps in LoadScheduler's order, with JobEffects doing them.
  class JobEffects;
  Status run_job(LoadJob& job);
  Status run_replica_job(LoadJob& job);  // a scale-up
  Result<std::shared_ptr<WrappedServer>> make_server(const LoadJob& job);
  // The device readings a load charged `estimate` is admitted against:
  // system RAM alone read now for a model on the CPU, every device for one
  // on a GPU. Takes mu_ briefly; call without it.
  std::vector<DeviceReading> read_devices_for(const DeviceBytes& estimate) LEMON_EXCLUDES(mu_);
  Status start_and_publish(LoadJob& job, const std::shared_ptr<WrappedServer>& server);
  // Drains and stops `victims`. With `spare_sessions`, retires none of them
  // (and returns false) when one holds a session pinned since the caller's
  // snapshot: checked under mu_, in the step that marks them draining, so a
  // pin_backend_slot() either comes first and spares them or fails.
  // A planned stop (every cause but an explicit unload) also spares a
  // pinned model, pinned since the caller chose it, unless it is
  // `reloading` (the model whose own load replaces it).
  bool retire(const std::vector<std::shared_ptr<ServerSlot>>& victims, const char* reason,
              bool spare_sessions = false, StopCause cause = StopCause::kPlanned,
              std::string_view reloading = {});
  // retire() in its two steps, for a load that starts its server while its
  // victims stop (issue #27 §1): withdraw() marks them draining, waits for
  // their requests and takes them out of the table (so no request reaches
  // them once it returns); stop_withdrawn() stops their processes.
  struct Withdrawn {
    std::vector<std::shared_ptr<ServerSlot>> owned;   // this caller stops them
    std::vector<std::shared_ptr<ServerSlot>> others;  // another retire() does
    bool spared = false;                              // spare_sessions kept them all
  };
  Withdrawn withdraw(const std::vector<std::shared_ptr<ServerSlot>>& victims, const char* reason,
                     bool spare_sessions, StopCause cause = StopCause::kPlanned,
                     std::string_view reloading = {});
  // The backend slots sessions hold on `slot`.
  std::vector<int> session_slots(const ServerSlot& slot) const LEMON_REQUIRES(mu_);
  // SlotStore::save_from for a drained server about to stop; takes mu_ briefly.
  void save_slots_before_stop(const std::shared_ptr<ServerSlot>& slot) LEMON_EXCLUDES(mu_);
  void emit_slot_events(const std::string& model, const std::vector<SlotFileEvent>& events) const;
  void stop_withdrawn(const Withdrawn& withdrawn, const char* reason);
  void finish_job(LoadJob& job, const Status& result, const std::shared_ptr<ServerSlot>& slot)
      LEMON_REQUIRES(mu_);
  void on_server_exit(const std::weak_ptr<ServerSlot>& slot);
  // Removes `slot` from its group (and the group when it was the last).
  void remove_replica(const std::shared_ptr<ServerSlot>& slot) LEMON_REQUIRES(mu_);
  // What `slot` holds per device: its estimate, with RAM measured once known.
  static DeviceBytes charges(const ServerSlot& slot);
  // Budgets from `readings` and what the servers hold.
  DeviceBytes budgets_for(const std::vector<DeviceReading>& readings) const LEMON_REQUIRES(mu_);
  // The memory half of admission (issue #13 §1): more victims so `job` fits,
  // or kInsufficientMemory. `victims` holds the slot-limit ones already.
  Status admit(const LoadJob& job, const std::vector<DeviceReading>& readings,
               std::vector<std::shared_ptr<ServerSlot>>& victims, bool may_evict) const
      LEMON_REQUIRES(mu_);
  // Measures the servers' RSS and the devices, and unloads idle servers on
  // a device another program squeezed. Housekeeper thread, mu_ not held.
  void watch_memory() LEMON_EXCLUDES(mu_);
  std::vector<DeviceMemoryInfo> memory_report_locked() const LEMON_REQUIRES(mu_);
  // Every replica of `model`.
  std::vector<std::shared_ptr<ServerSlot>> replicas_of(std::string_view model) const
      LEMON_REQUIRES(mu_);

  // Housekeeper thread: scale-up, scale-down and keep-alive (issue #13).
  void housekeeper_loop();
  HousekeepingWork plan_housekeeping(std::chrono::steady_clock::time_point now) LEMON_REQUIRES(mu_);
  // A group as the pool's policy sees it, and that policy's settings.
  ModelPoolView pool_view(const std::string& name, const ModelGroup& group,
                          std::chrono::steady_clock::time_point now) const LEMON_REQUIRES(mu_);
  PoolPolicy pool_policy() const LEMON_REQUIRES(mu_);
  // Default models (issue #29 §3): `victims` leave for another model's
  // load, so the defaults among them want to come back; the housekeeper
  // queues the loads defaults_to_load() picks.
  // `displacer` is the model being loaded; a default's own load displaces
  // nothing that comes back (two defaults never take turns).
  void note_displaced(const std::vector<std::shared_ptr<ServerSlot>>& victims,
                      const std::string& displacer) LEMON_REQUIRES(mu_);
  void load_defaults() LEMON_REQUIRES(mu_);
  void emit(const RouterEvent& event) const;
  void shutdown_now();
  std::vector<SlotView> snapshot() const LEMON_REQUIRES(mu_);
  // Publishes a new RouterView of the table, the queue and the waiting
  // requests. Lock order: mu_, then view_mu_.
  void republish() LEMON_REQUIRES(mu_);
  LoadedServerInfo describe(const ServerSlot& slot) const LEMON_REQUIRES(mu_);

  const ModelResolver& models_;
  ServerFactory& factory_;
  const RouterConfig config_;
  // What of config_ a configuration reload may change; read under mu_.
  LiveRouterSettings live_ LEMON_GUARDED_BY(mu_);
  // The CLI layer of load options changes generation with each reload that
  // changes it; a model published with an older one is checked (and, if its
  // options differ, reloaded once idle) by the housekeeper (issue #30 §1).
  std::uint64_t cli_generation_ LEMON_GUARDED_BY(mu_) = 0;

  mutable Mutex mu_;
  CondVar cv_;  // slots, in-flight counts and jobs changed
  std::map<std::string, ModelGroup, std::less<>> groups_ LEMON_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<LoadJob>> queue_ LEMON_GUARDED_BY(mu_);
  std::shared_ptr<LoadJob> current_job_ LEMON_GUARDED_BY(mu_);
  std::uint64_t lru_clock_ LEMON_GUARDED_BY(mu_) = 0;
  std::uint64_t next_slot_id_ LEMON_GUARDED_BY(mu_) = 1;
  std::string last_loaded_ LEMON_GUARDED_BY(mu_);
  std::multiset<std::string, std::less<>> blocked_ LEMON_GUARDED_BY(mu_);
  std::uint64_t next_ticket_ LEMON_GUARDED_BY(mu_) = 1;
  int pinned_waiters_ LEMON_GUARDED_BY(mu_) = 0;  // acquire_server() calls waiting
  int queued_total_ LEMON_GUARDED_BY(mu_) = 0;
  std::map<std::string, int, std::less<>> queued_by_model_ LEMON_GUARDED_BY(mu_);
  LoadCooldown cooldown_ LEMON_GUARDED_BY(mu_);
  mutable Mutex view_mu_;  // a leaf lock: guards only view_
  std::shared_ptr<const RouterView> view_ LEMON_GUARDED_BY(view_mu_) =
      std::make_shared<RouterView>();
  std::atomic<bool> shutting_down_{false};
  std::once_flag shutdown_once_;
  std::thread loader_;
  CondVar housekeeper_cv_;  // wakes the housekeeper early
  std::vector<DeviceReading> last_readings_ LEMON_GUARDED_BY(mu_);
  // The default models that are not loaded and want to come back.
  std::map<std::string, AbsentDefault> absent_defaults_ LEMON_GUARDED_BY(mu_);
  std::thread housekeeper_;
};

}  // namespace lemon
