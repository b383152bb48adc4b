// TableSnapshot: the server table as one look under its lock saw it, in
// plain values, for the decisions the loader and the housekeeper make
// without that lock (evictions, memory admission, the pool, default
// models, option reloads). A decision over a snapshot is acted on through
// the table again, which checks under its lock what matters then (a
// server draining already, a session pinned meanwhile, a pin). Each
// replica's ServerSlot is kept to act on and for its const fields.
//
// Thread-safety: a value.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/device_bytes.h"
#include "lemon/router/eviction_policy.h"
#include "lemon/router/pool_policy.h"
#include "model_group.h"
#include "server_slot.h"

namespace lemon {

struct ReplicaState {
  std::shared_ptr<ServerSlot> slot;
  bool ready = false;     // takes new leases (not draining)
  bool retiring = false;  // someone drains or stops it already
  int in_flight = 0;
  std::uint64_t lru_tick = 0;
  std::chrono::steady_clock::time_point idle_since{};
  int sessions = 0;  // its backend slots pinned to sessions
  DeviceBytes charges;
};

struct GroupState {
  std::string model;
  std::vector<ReplicaState> replicas;  // in publication order; never empty
  int waiting = 0;                     // requests in its line
  std::chrono::steady_clock::time_point waiting_since{};
  std::optional<std::chrono::milliseconds> keep_alive;
  bool pinned = false;
  int priority = 0;

  const WrappedServer& first() const { return *replicas.front().slot->server; }
  bool serving() const;
  int in_flight() const;
  std::uint64_t lru_tick() const;
  std::vector<std::shared_ptr<ServerSlot>> slots() const;
};

struct TableSnapshot {
  std::vector<GroupState> groups;  // by model name

  const GroupState* find(std::string_view model) const;
  // Every replica of every group.
  std::vector<std::shared_ptr<ServerSlot>> all_slots() const;
  // One view per model, as the eviction policy and the queue's order see
  // the table: a model counts as busy while any replica serves or anyone
  // waits in its line.
  std::vector<SlotView> slot_views() const;
};

// A snapshot of `groups`; call it with the table's lock held.
TableSnapshot snapshot_of(const ModelGroups& groups);

// A group as the pool's policy sees it (never scaling up: the housekeeper,
// which starts replicas, says when one is under way). A model's
// `max_replicas` load option wins over `default_max_replicas`.
ModelPoolView pool_view(const GroupState& group, int default_max_replicas);

}  // namespace lemon
