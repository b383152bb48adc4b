// ServerSlot: the router's record of one loaded WrappedServer (one replica of
// a model; the model's replicas and its waiting line are a ModelGroup).
// Internal to src/router. Shared between the ServerTable and the Leases of
// in-flight requests, so a server that is removed from the table (evicted,
// crashed) stays valid for requests that still hold it.
//
// Thread-safety: the const members are immutable and may be read anywhere;
// everything else is guarded by the ServerTable's lock (Lease touches it
// only through the table). in_flight, last_use_ms and measured_ram are
// atomics so that readers without the lock (RouterView, a TableSnapshot's
// user) see exact values; in_flight and last_use_ms are still changed only
// under the table's lock.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemon/backends/wrapped_server.h"
#include "lemon/core/device_bytes.h"
#include "lemon/models/recipe_options.h"

namespace lemon {

enum class SlotState {
  kReady,     // serving; new leases are granted
  kDraining,  // chosen for eviction or unload: no new leases, waits for in_flight == 0
  kGone,      // stopped or crashed, removed from the table
};

// Where a new server comes from: the load that makes it.
struct SlotOrigin {
  std::string model;
  bool replica = false;  // one more replica of a loaded model (a scale-up)
  DeviceBytes estimate;  // its memory estimate, before it starts
  // What admission charged it (admission_charge(): a remembered footprint
  // with its margin, else the estimate); empty: the estimate.
  DeviceBytes charged;
  // Whether requests may go ahead into the backend's own queue (false while
  // the model may gain replicas: a request queued inside one replica would
  // not move to a new idle one).
  bool send_ahead = true;
  // The request options of the load that made the model's first server
  // (POST /load's; nullopt for an automatic load), and the generation of the
  // CLI layer its options were made with.
  std::optional<RecipeOptions> request_options;
  std::uint64_t cli_generation = 0;
};

struct ServerSlot {
  ServerSlot(std::uint64_t slot_id, std::shared_ptr<WrappedServer> srv, int replica_index,
             const SlotOrigin& origin)
      : id(slot_id),
        server(std::move(srv)),
        capacity(server->slots().total),
        ahead(capacity > 0 && origin.send_ahead ? std::max(0, server->slots().queued_ahead) : 0),
        replica(replica_index),
        estimate(origin.estimate),
        charged(origin.charged.empty() ? origin.estimate : origin.charged),
        request_options(origin.request_options),
        cli_generation(origin.cli_generation) {}

  const std::uint64_t id;
  const std::shared_ptr<WrappedServer> server;
  // Requests the backend serves at once (RequestSlots::total); 0 = no limit.
  const int capacity;
  // Requests beyond `capacity` the backend queues itself
  // (RequestSlots::queued_ahead), leased only while no session holds or
  // restores a slot: such a request could take a session's slot.
  const int ahead;
  // 0 for a model's first server, 1, 2, ... for the replicas started for it.
  const int replica;
  // What it was expected to hold per device before it started, and what
  // admission charged it (SlotOrigin::charged).
  const DeviceBytes estimate;
  const DeviceBytes charged;
  // What its model's load was asked for (SlotOrigin): a reload for a new
  // CLI layer keeps the request options, and the housekeeper compares the
  // generation with the one in force.
  const std::optional<RecipeOptions> request_options;
  const std::uint64_t cli_generation;
  // Its process group's resident memory, measured by the housekeeper (0:
  // not yet); replaces the RAM estimate once known.
  std::atomic<std::int64_t> measured_ram{0};

  // What it holds per device: its charge, with RAM measured once known.
  DeviceBytes charges() const {
    DeviceBytes out = charged;
    if (const auto measured = measured_ram.load(std::memory_order_relaxed); measured > 0) {
      out[kRamDevice] = measured;
    }
    return out;
  }
  // The methods below REQUIRE the table's lock held.

  // A lease began or ended: `tick` is the table's LRU clock.
  void touch(std::uint64_t tick);
  // Reserves llama.cpp slot `k` for a session; false when the server has
  // no such slot.
  bool pin_backend_slot(int k);
  // Frees it; true when it was reserved.
  bool unpin_backend_slot(int k);
  // Marks slot `k` busy and restoring, counted in in_flight, for a lease
  // that holds it while its saved state is restored; false when there is no
  // such slot.
  bool hold_for_restore(int k);
  // The backend slots sessions hold.
  std::vector<int> session_slots() const;
  // For a request without a session while some slots are pinned or
  // restoring: the slot_for_request() it must use, marked busy (-1: let
  // the backend choose).
  int claim_request_slot();
  // Slot `k` is not in use by a lease (or `k` names none).
  bool backend_slot_free(int k) const;
  // Marks a lease's slot `k` busy or free (nothing when `k` names none).
  void set_backend_slot_busy(int k, bool busy);
  // True when one more request fits: a free slot, or room in the backend's
  // own queue.
  bool has_capacity() const {
    return capacity == 0 || in_flight < capacity + (pinned == 0 && !restoring ? ahead : 0);
  }
  // The backend slot for a request without a session while some slots are
  // pinned: the lowest free one that no session holds, else the lowest free
  // one (that session's context is then evaluated again on its next turn,
  // but no request waits for a slot that sits idle); -1 if none is known
  // free.
  int slot_for_request() const {
    int fallback = -1;
    for (std::size_t i = 0; i < pinned_slots.size(); ++i) {
      if (!busy_slots[i]) {
        if (!pinned_slots[i]) {
          return static_cast<int>(i);
        }
        if (fallback < 0) {
          fallback = static_cast<int>(i);
        }
      }
    }
    return fallback;
  }

  // Guarded by the ServerTable's lock.
  SlotState state = SlotState::kReady;
  std::atomic<int> in_flight{0};                       // exact count of live Leases
  std::uint64_t lru_tick = 0;                          // logical clock of the last touch
  std::atomic<std::int64_t> last_use_ms{0};            // wall clock (Unix ms) of the last touch
  std::chrono::steady_clock::time_point idle_since{};  // when in_flight last became 0
  bool retire_owned = false;                           // someone is draining/stopping it
  // llama.cpp slots: those pinned to sessions, and, while any is pinned,
  // those that leases use (a lease then names its backend slot, so requests
  // without a session never take a session's cached context). Sized
  // `capacity` at the first pin.
  std::vector<bool> pinned_slots;
  std::vector<bool> busy_slots;
  int pinned = 0;
  // Its saved slots are being restored, each held by a lease of the loader's
  // (busy_slots): a request without a session then names a free slot too.
  bool restoring = false;

 private:
  // Sizes pinned_slots and busy_slots `capacity` at their first use.
  void size_backend_slots();
};

}  // namespace lemon
