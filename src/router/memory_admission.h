// Memory admission over a TableSnapshot: what the router's servers hold per
// device, the budgets that leaves, whether a load fits, and which servers
// plan_admission() unloads for it. The policy itself is pure
// (lemon/router/memory_policy.h); this turns a snapshot into its inputs and
// its plan into servers and typed errors.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lemon/core/device_bytes.h"
#include "lemon/core/error.h"
#include "lemon/router/loaded_server_info.h"
#include "lemon/router/memory_policy.h"
#include "table_snapshot.h"

namespace lemon {

// A load as admission sees it.
struct AdmissionAsk {
  std::string model;
  bool replica = false;  // a scale-up: the model's own servers stay
  int priority = 0;      // servers of a higher priority are as safe as pinned ones
  DeviceBytes estimate;
};

// Adds to `victims` (the slot limit's, already chosen) the servers that must
// go for `ask` to fit, least recently used idle ones first; or
// kInsufficientMemory when it cannot fit even alone, when only pinned or
// higher-priority servers would make room, or when it would need evictions
// and `may_evict` is false. Nothing is evicted on an error.
Status admit_to_memory(const TableSnapshot& table, const AdmissionAsk& ask,
                       const std::vector<DeviceReading>& readings, const BudgetRule& rule,
                       std::vector<std::shared_ptr<ServerSlot>>& victims, bool may_evict);

// What the budgets leave on each device after the servers that stay: every
// server of `table` but the `victims` and, unless `ask` is a replica, the
// model's own (a reload replaces them). Devices without a budget are left
// out (not limited).
DeviceBytes room_after(const TableSnapshot& table, const AdmissionAsk& ask,
                       const std::vector<DeviceReading>& readings, const BudgetRule& rule,
                       const std::vector<std::shared_ptr<ServerSlot>>& victims);

// Each device of `readings` with its budget and `ours` (what the router's
// servers hold there), as /health and the RouterView report them.
std::vector<DeviceMemoryInfo> device_report(const std::vector<DeviceReading>& readings,
                                            const DeviceBytes& ours, const BudgetRule& rule);

}  // namespace lemon
