// The router's decisions, as pure functions over a snapshot of the slot
// table: which servers a load must evict, and what to do when a load fails.
// No locks, clocks, I/O or logging here; inputs are sorted so results are
// deterministic. The Router calls these under its lock and then acts.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/core/model_types.h"
#include "lemon/router/slot_limits.h"

namespace lemon {

// One loaded server as the policy sees it.
struct SlotView {
  std::string model;
  ModelType type = ModelType::kLlm;
  Device device = Device::kNone;
  int in_flight = 0;
  std::uint64_t last_use = 0;  // logical LRU clock: larger is more recent
  bool pinned = false;         // never evicted but by an explicit unload or reload
  int priority = 0;            // evicted only by a load of equal or higher priority
};

// The server a load wants to start.
struct LoadTarget {
  std::string model;
  ModelType type = ModelType::kLlm;
  Device device = Device::kNone;
  int priority = 0;  // the servers it may evict have at most this priority
};

// How a model stands against evictions, as POST /load gives
// it: a field left unset keeps what the model has, or its saved value.
struct LoadStanding {
  std::optional<bool> pinned;
  std::optional<int> priority;
};

// kMemory: chosen by the memory budget (memory_policy.h), not by plan_eviction.
// kOutOfMemory: unloaded after a load ran out of memory (Router).
enum class EvictionReason { kReload, kNpuExclusive, kSlotLimit, kMemory, kOutOfMemory };
const char* eviction_reason_name(EvictionReason reason);

struct Eviction {
  std::string model;
  EvictionReason reason;
};

// Which servers must go before `target` starts, in the order they were chosen:
//  (1) the target model itself, when it is loaded (a reload with new options);
//  (2) if the target uses the NPU, every other server that uses the NPU,
//      whatever its type and the limits (seed 000 "NPU Exclusivity");
//  (3) while the target's type is at its limit, a server of that type:
//      the lowest priority first, then idle before busy, then the least
//      recently used, so a busy server is only evicted (after draining) when
//      every candidate of the type is busy. Types never evict each other.
// Pinned servers and servers of a higher priority than the target's (issue
// #29 §3) are never chosen by (2) or (3): see pinned_in_the_way() and
// outranking_in_the_way(). The plan may then leave the type over its limit;
// the router never carries such a plan out.
std::vector<Eviction> plan_eviction(const std::vector<SlotView>& slots, const LoadTarget& target,
                                    const SlotLimits& limits);

// The pinned models that stand in the way of `target`, by name: an NPU
// server when the target needs the NPU, or, when the target's type is at its
// limit, the pinned servers of that type once every unpinned one is chosen.
// Priorities are not counted here: a pin is what no waiting can move. Empty
// when evicting every unpinned server in the way would make room; otherwise
// the load fails at once with kSlotsPinned and nothing is evicted.
std::vector<std::string> pinned_in_the_way(const std::vector<SlotView>& slots,
                                           const LoadTarget& target, const SlotLimits& limits);

// The unpinned servers of a higher priority than the target's that stand in
// its way (the NPU, or its type's limit once every server the target
// outranks is chosen), by name. While this is not empty, the load waits in
// the queue: it never evicts them, and it goes once they
// leave (unload, keep-alive, a crash) or the target's priority is raised.
std::vector<std::string> outranking_in_the_way(const std::vector<SlotView>& slots,
                                               const LoadTarget& target, const SlotLimits& limits);

// The server of `type` among `slots` that a load of `max_priority` evicts
// first, skipping pinned ones, those above `max_priority` and names in
// `exclude`: the lowest priority, then idle before busy, then the least
// recently used; ties broken by name. Empty if none.
std::string choose_lru_victim(const std::vector<SlotView>& slots, ModelType type,
                              const std::vector<std::string>& exclude, int max_priority = 0);

enum class FailureAction {
  kFail,              // report the error; nothing is evicted
  kEvictAllAndRetry,  // evict every server (after draining), then retry once
};

// Seed 000 "Error Handling", with typed classification: only failures a
// retry may fix (the backend exited or hung while starting, spawn ran out of
// resources) evict everything, and only on the first attempt. Not again for
// a model whose last load failed even after everything was evicted
// (`failed_after_evict_all`): that showed the failure is the model's own, so
// a broken model cannot empty the machine on every request for it; a
// success or POST /load forgets it.
FailureAction on_load_failure(ErrorCode code, int attempt, bool failed_after_evict_all);

// A server a load evicts, as may_start_while_victims_stop sees it.
struct VictimView {
  Device device = Device::kCpu;
  int in_flight = 0;
};

// Whether a load may start while the servers it evicts are still stopping
// (a switch then costs the new backend's start, not the old
// one's stop as well). Only when memory is not what they make room for and
// nothing is served beside the new server: the new server and every victim
// run on the CPU, every victim is idle (a busy one drains first, as
// before), and the memory budget admits the new server with the victims
// still counted. A GPU's or an NPU's memory is freed only when its process
// is gone, so loads there wait.
bool may_start_while_victims_stop(Device new_server, const std::vector<VictimView>& victims,
                                  bool fits_beside_victims);

}  // namespace lemon
