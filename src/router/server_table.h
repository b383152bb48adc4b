// ServerTable: the loaded servers (each model's replicas, a ModelGroup of
// ServerSlots), the leases on them, each model's line of requests waiting
// for a free slot, the session pins of their llama.cpp slots, the LRU clock,
// and the servers' share of the published RouterView. Internal to
// src/router.
//
// What it promises:
// - Busy-ness is exact: a lease is counted here, under the table's lock,
//   and given back only by Lease's destructor (or release()).
// - A new server is published together with the leases of the load's
//   waiters (publish()), so nothing can evict it before they run.
// - withdraw() marks servers draining (no new leases) and waits, with the
//   lock released, until their leases are gone; it spares servers that a
//   session or a pin claimed after the caller chose them.
// - Every wait (a free slot, a session's server, a drain) releases the
//   lock; nothing here spawns, stops, reads a device or does I/O.
//
// Lock order: the LoadQueue's lock, then this table's (the queue publishes
// and grants through the table while it holds its own); below it only leaf
// locks (WaitQuota, ViewBoard, MemoryReadings, LiveSettings, Doorbell). The
// table never calls the queue or the housekeeper: it rings their doorbells.
//
// Thread-safety: every method from any thread. A method that may wait
// (lease, lease_server, withdraw, finish_stop) must be called without the
// queue's lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doorbell.h"
#include "lemon/core/mutex.h"
#include "lemon/router/router.h"
#include "live_settings.h"
#include "memory_readings.h"
#include "model_group.h"
#include "table_snapshot.h"
#include "view_board.h"
#include "wait_quota.h"

namespace lemon {

// What a request asks of a loaded model.
struct LeaseAsk {
  std::optional<ModelType> required;  // refused (kUnsupportedOperation) for another type
  std::optional<KeepAlive> keep_alive;
  // A place in the model's line the request holds already (a load gave it
  // one): it waits there, skipping the checks. 0: none.
  std::uint64_t ticket = 0;
};

// A lease granted with a publication, or a place in the model's line when
// its slots were all taken.
struct Grant {
  std::optional<Lease> lease;
  std::uint64_t ticket = 0;
};

// A new server as its load publishes it.
struct Publication {
  std::string model;
  bool replica = false;
  // The model's standing: a fresh model takes it; a model loaded again
  // takes what the load named (pin_given, priority_given).
  bool pinned = false;
  bool pin_given = false;
  int priority = 0;
  bool priority_given = false;
  // Its saved llama.cpp slots: held by leases until they are restored.
  std::vector<int> saved_slots;
  // One entry per waiter that wants a lease, in arrival order: its
  // request's keep_alive.
  std::vector<std::optional<KeepAlive>> wants;
};

struct Published {
  std::vector<Grant> grants;     // one per entry of Publication::wants
  std::vector<Lease> restoring;  // end them once the saved slots are restored
};

// Why servers stop: planned by the router (eviction, keep-alive, scale-down,
// memory, recovery), or an explicit unload, the one thing that stops a
// pinned model.
enum class StopCause { kPlanned, kExplicitUnload };

struct RetireRule {
  // Spare them all when one holds a session pinned since the caller chose
  // them (the pool's timers never stop a replica with sessions).
  bool spare_sessions = false;
  StopCause cause = StopCause::kPlanned;
  // A planned stop spares a model pinned since it was chosen, except the
  // model whose own load replaces it.
  std::string reloading;
};

// A server taken out of the table, to stop: with the backend slots its
// sessions held (saved before the stop).
struct Withdrawal {
  std::shared_ptr<ServerSlot> slot;
  std::vector<int> session_slots;
};

struct Withdrawn {
  std::vector<Withdrawal> owned;                    // this caller stops them
  std::vector<std::shared_ptr<ServerSlot>> others;  // another stop owns them
  bool spared = false;                              // spare_sessions kept them all
};

enum class StandingUpdate { kNotLoaded, kUnchanged, kChanged };

// The pin, priority and POST /load options a model had when its last server
// exited on its own: the load that brings it back keeps them unless it names
// its own.
struct StandingBeforeCrash {
  bool pinned = false;
  int priority = 0;
  std::optional<RecipeOptions> request_options;
};

// What the table rings and reads besides its own state.
struct TableSignals {
  Doorbell& loader;       // the table changed in a way a held-back load may care about
  Doorbell& housekeeper;  // a server with keep_alive 0 went idle
  const std::atomic<bool>& loads_queued;  // a server going idle matters to the loader
  const std::atomic<bool>& stopping;
};

class ServerTable {
 public:
  ServerTable(const RouterConfig& config, LiveSettings& settings, MemoryReadings& readings,
              ViewBoard& board, TableSignals signals);
  ServerTable(const ServerTable&) = delete;
  ServerTable& operator=(const ServerTable&) = delete;

  // A lease on `model`'s least busy ready replica with a free slot; when
  // none is free (or someone waits), a place in its line (counted in
  // `place`) and a wait for a free slot. Null when the model is not served
  // (not loaded, draining, or it stopped serving while the request waited):
  // the caller loads it. Errors: kUnsupportedOperation, kQueueFull,
  // kCancelled, kShuttingDown.
  Result<std::optional<Lease>> lease(std::string_view model, const LeaseAsk& ask,
                                     WaitQuota::Place& place, const WaitHooks& hooks)
      LEMON_EXCLUDES(mu_);
  // Router::acquire_server's contract.
  Result<Lease> lease_server(std::uint64_t server_id, int backend_slot, const WaitHooks& hooks)
      LEMON_EXCLUDES(mu_);
  bool pin_backend_slot(std::uint64_t server_id, int backend_slot) LEMON_EXCLUDES(mu_);
  void unpin_backend_slot(std::uint64_t server_id, int backend_slot) LEMON_EXCLUDES(mu_);

  // Some replica of `model` takes new requests.
  bool serving(std::string_view model) const LEMON_EXCLUDES(mu_);
  // When `model` is served (by servers of `same_options`, when given):
  // touches its first replica and grants what `wants` asks, as publish()
  // does. Null otherwise.
  std::optional<std::vector<Grant>> grant_loaded(std::string_view model,
                                                 const RecipeOptions* same_options,
                                                 const std::vector<std::optional<KeepAlive>>& wants)
      LEMON_EXCLUDES(mu_);
  // The record of a server about to start: a new id, and the next replica
  // index of its model for a replica.
  std::shared_ptr<ServerSlot> make_slot(std::shared_ptr<WrappedServer> server,
                                        const SlotOrigin& origin) LEMON_EXCLUDES(mu_);
  // Puts a started server in the table and grants its load's waiters, in
  // one step. Null (nothing changes) while shutting down, when the server
  // exited meanwhile, or for a replica of a model no longer loaded.
  std::optional<Published> publish(const std::shared_ptr<ServerSlot>& slot, const Publication& p)
      LEMON_EXCLUDES(mu_);
  // Its saved slots are restored: requests without a session may take them.
  void end_restore(ServerSlot& slot) LEMON_EXCLUDES(mu_);
  // Applies a load's standing to `model` while it is served (by servers of
  // `same_options`, whose LRU clock it refreshes, when given).
  StandingUpdate update_standing(std::string_view model, const LoadStanding& standing,
                                 const RecipeOptions* same_options) LEMON_EXCLUDES(mu_);

  // Marks `victims` draining (no new leases), waits for their requests and
  // takes them out of the table: no request reaches them once it returns.
  Withdrawn withdraw(const std::vector<std::shared_ptr<ServerSlot>>& victims, const char* reason,
                     const RetireRule& rule) LEMON_EXCLUDES(mu_);
  // The withdrawn servers are stopped: marks them gone, and waits until
  // those another caller stops are gone too.
  void finish_stop(const Withdrawn& withdrawn) LEMON_EXCLUDES(mu_);
  // A server's process exited on its own: out of the table at once.
  void drop_exited(const std::shared_ptr<ServerSlot>& slot) LEMON_EXCLUDES(mu_);
  // What `model` stood at when its last server exited on its own, until a
  // server of it is published again; nullopt when it was neither pinned
  // nor of a priority other than 0, or did not crash.
  std::optional<StandingBeforeCrash> standing_before_crash(std::string_view model) const
      LEMON_EXCLUDES(mu_);
  // Forgets what `model` stood at before its crash ("" every model's).
  void forget_crash(std::string_view model) LEMON_EXCLUDES(mu_);
  // Shutdown: every server, out of the table, to stop.
  Withdrawn take_all() LEMON_EXCLUDES(mu_);

  TableSnapshot snapshot() const LEMON_EXCLUDES(mu_);
  std::vector<LoadedServerInfo> loaded() const LEMON_EXCLUDES(mu_);
  std::optional<LoadedServerInfo> most_recently_loaded() const LEMON_EXCLUDES(mu_);
  // Something the table shows but does not own changed (the settings, the
  // devices' readings, measured memory) or the router is stopping:
  // publishes the view again and wakes the table's waiters to look again.
  void changed() LEMON_EXCLUDES(mu_);

 private:
  friend class Lease;

  void release(ServerSlot& slot, int backend_slot) LEMON_EXCLUDES(mu_);
  // Counts a lease on `slot` and applies the request's keep_alive.
  Lease grant(const std::shared_ptr<ServerSlot>& slot, std::optional<KeepAlive> keep_alive)
      LEMON_REQUIRES(mu_);
  // A lease per entry of `wants` on `group`'s free replicas, in order; a
  // ticket in its line for the rest.
  std::vector<Grant> grant_each(ModelGroup& group,
                                const std::vector<std::optional<KeepAlive>>& wants)
      LEMON_REQUIRES(mu_);
  // Waits in `model`'s line with `ticket` until it is first and a replica
  // has a free slot (that replica: lease it) or the model stops serving
  // (null). Errors: kCancelled, kShuttingDown.
  Result<std::shared_ptr<ServerSlot>> wait_for_slot(MutexLock& lock, const std::string& model,
                                                    std::uint64_t ticket, const WaitHooks& hooks)
      LEMON_REQUIRES(mu_);
  // `model`'s group while it serves (by servers of `same_options`, when
  // given); null otherwise.
  ModelGroup* served_group(std::string_view model, const RecipeOptions* same_options)
      LEMON_REQUIRES(mu_);
  // Removes `slot` from its group (and the group when it was the last).
  void remove_replica(const std::shared_ptr<ServerSlot>& slot) LEMON_REQUIRES(mu_);
  // Publishes the servers, the devices and the limits in force.
  void republish() LEMON_REQUIRES(mu_);

  const RouterConfig& config_;
  LiveSettings& settings_;
  MemoryReadings& readings_;
  ViewBoard& board_;
  const TableSignals signals_;

  mutable Mutex mu_;
  CondVar changed_;  // leases, lines, pins or servers changed
  ModelGroups groups_ LEMON_GUARDED_BY(mu_);
  std::uint64_t lru_clock_ LEMON_GUARDED_BY(mu_) = 0;
  std::uint64_t next_slot_id_ LEMON_GUARDED_BY(mu_) = 1;
  std::uint64_t next_ticket_ LEMON_GUARDED_BY(mu_) = 1;
  int pinned_waiters_ LEMON_GUARDED_BY(mu_) = 0;  // lease_server() calls waiting
  std::string last_loaded_ LEMON_GUARDED_BY(mu_);
  std::map<std::string, StandingBeforeCrash, std::less<>> crashed_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon
