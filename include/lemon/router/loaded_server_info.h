// LoadedServerInfo: one loaded server as /health reports it.
//
// Thread-safety: a value.
#pragma once

#include <algorithm>

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/device_bytes.h"
#include "lemon/core/model_types.h"

namespace lemon {

// How a server's requests in flight split between its slots and the
// backend's own queue (RequestSlots::queued_ahead). slots == 0
// (no limit): all of them are served.
struct SlotOccupancy {
  int busy = 0;
  int queued_in_backend = 0;
};
inline SlotOccupancy slot_occupancy(int in_flight, int slots) {
  if (slots <= 0) {
    return {in_flight, 0};
  }
  return {std::min(in_flight, slots), std::max(0, in_flight - slots)};
}

struct LoadedServerInfo {
  std::string model_name;
  std::string checkpoint;
  std::string recipe;
  ModelType type = ModelType::kLlm;
  Device device = Device::kNone;
  std::string backend_url;
  nlohmann::json recipe_options;
  std::optional<int> pid;
  int in_flight = 0;
  int slots = 0;                 // requests served at once; 0 = no limit
  int slot_ctx_size = 0;         // context tokens per slot; 0 when not applicable
  int waiting = 0;               // requests waiting for a free slot (in any replica)
  int replica = 0;               // 0: the model's first server; 1, 2, ...: scale-up replicas
  std::uint64_t server_id = 0;   // unique for the router's life (Router::acquire_server)
  std::int64_t last_use_ms = 0;  // Unix time in milliseconds
  bool draining = false;
  bool pinned = false;          // the model is pinned
  int priority = 0;             // the model's priority
  DeviceBytes memory_estimate;  // before it started
  // What admission charged it: a remembered footprint with its margin, or
  // the estimate (footprint_store.h).
  DeviceBytes memory_charged;
  std::int64_t measured_ram = 0;  // its process group's RSS, once measured (0: not yet)
  nlohmann::json speculation;     // WrappedServer::speculation(): null when none
  // The context fitted to memory, {"ctx_size", "reason", "detail"}, for a
  // load whose ctx_size asked for one; null otherwise.
  nlohmann::json context_fit;
};

// One device's memory as the router last saw it.
struct DeviceMemoryInfo {
  std::string device;
  std::int64_t total = 0;
  std::int64_t available = 0;
  std::int64_t budget = 0;
  std::int64_t used_by_router = 0;  // what its servers hold there
};

}  // namespace lemon
