// Memory-aware admission (seed 004 scenarios 1 and 4), as pure
// functions over a snapshot: how much each device may hold, which servers a
// load must evict to fit, and which idle servers to unload when another
// program takes a device's memory. No clocks, I/O or logging here.
//
// Memory is counted per device ("ram", "gpu0", "gpu1", ...): a server is
// charged bytes on each device it uses (its estimate until it is measured).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lemon/core/device_bytes.h"

namespace lemon {

// A device as measured now.
struct DeviceReading {
  std::string device;          // "ram", "gpu0", ...
  std::int64_t total = 0;      // bytes
  std::int64_t available = 0;  // free for new allocations (MemAvailable, VRAM total - used)
};

// Per device: fraction x (available + ours), or the absolute size for RAM.
// `ours`: what the router's servers hold on each device now.
DeviceBytes device_budgets(const std::vector<DeviceReading>& devices, const DeviceBytes& ours,
                           const BudgetRule& rule);

// One server as the memory policy sees it.
struct ServerMemory {
  std::string id;  // the server's name in the table
  DeviceBytes charges;
  int in_flight = 0;
  std::uint64_t lru = 0;  // logical clock: larger is more recent
  bool pinned = false;    // never a victim
};

struct AdmissionPlan {
  enum class Kind {
    kFits,    // no eviction needed
    kEvict,   // fits once `victims` are gone (busy ones drain first)
    kTooBig,  // cannot fit even alone: `device`, `need`, `budget` say why
    kPinned,  // fits only if pinned servers went: `pinned` names them
  };
  Kind kind = Kind::kFits;
  std::vector<std::string> victims;  // idle least recently used first, then busy
  std::string device;
  std::int64_t need = 0;
  std::int64_t budget = 0;
  std::vector<std::string> pinned;  // kPinned: the pinned servers on `device`
};

// What loading a server charged `request` needs, given `servers` (those
// already chosen to go are left out by the caller) and the budgets. Devices
// without a budget are not limited. Pinned servers are never victims: when
// the request fits only if they went, the plan is kPinned and evicts nothing.
AdmissionPlan plan_admission(const std::vector<ServerMemory>& servers, const DeviceBytes& budgets,
                             const DeviceBytes& request);

// Other programs took memory: on each device whose available memory is
// below `margin`, the idle servers to unload, least recently used first,
// until what they hold covers the shortfall (or none is left). Busy servers
// and pinned servers are never chosen.
std::vector<std::string> plan_pressure_relief(const std::vector<ServerMemory>& servers,
                                              const std::vector<DeviceReading>& devices,
                                              std::int64_t margin);

// The device a server charged `estimate` mostly lives on: the one with the
// largest charge ("ram" when there is none).
std::string primary_device(const DeviceBytes& estimate);

// A load ran out of memory on `device`: the idle servers that
// hold memory there, least recently used first. The router unloads them one
// at a time, retrying the load after each, before it evicts everything.
// Busy servers are never chosen here.
std::vector<std::string> plan_out_of_memory_recovery(const std::vector<ServerMemory>& servers,
                                                     const std::string& device);

// What admission charges a server: per device of its `estimate`, the
// `remembered` peak of its configuration (footprint_store.h) plus a margin
// (kFootprintMargin of it, at least kFootprintMarginFloor) where one was
// measured, else the estimate. A configuration never measured is charged
// its estimate.
inline constexpr double kFootprintMargin = 0.05;
inline constexpr std::int64_t kFootprintMarginFloor = std::int64_t{32} << 20;
DeviceBytes admission_charge(const DeviceBytes& estimate,
                             const std::optional<DeviceBytes>& remembered);

// "1.5 GiB", "512 MiB", "900 B": for messages.
std::string format_bytes(std::int64_t bytes);

}  // namespace lemon
