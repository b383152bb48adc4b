// Footprints remembered across loads: what a server of one configuration
// (model, recipe, load options, device) was measured to hold, kept after it
// stops, so the next admission of the same configuration is charged the
// measurement (with a margin, admission_charge() in memory_policy.h)
// instead of the estimate. FootprintStore is where they are kept (the real
// one is a JSON file in the cache folder, telemetry/footprint_file.h; tests
// give a map); the router only calls it.
//
// Thread-safety: a FootprintStore may be called from any thread (the
// loader recalls, the housekeeper remembers, /models reads); the router
// calls it with none of its locks held.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/device_bytes.h"

namespace lemon {

class WrappedServer;

// One configuration: the model, its recipe, the load options it runs with
// (a fitted context as the size it got) and the device it is charged to
// mostly (memory_policy.h's primary_device).
struct FootprintKey {
  std::string model;
  std::string recipe;
  nlohmann::json options;
  std::string device;
  bool operator==(const FootprintKey&) const = default;
};

// The key of `server` (its model, recipe, effective options and device).
FootprintKey footprint_key(const WrappedServer& server, const DeviceBytes& estimate);

class FootprintStore {
 public:
  virtual ~FootprintStore() = default;
  // What a server of `key` was measured to hold at most, per device
  // ("ram": its process group's RSS; "gpu<N>": its memory there), or
  // nullopt for a configuration never measured.
  virtual std::optional<DeviceBytes> recall(const FootprintKey& key) const = 0;
  // A measurement of a running server of `key`: kept when it is above what
  // was kept for a device (the peak), or the first.
  virtual void remember(const FootprintKey& key, const DeviceBytes& measured) = 0;
  // The last configuration of `model` measured, or nullopt: what /models
  // shows for a model that is not loaded.
  virtual std::optional<DeviceBytes> last_of(const std::string& model) const = 0;
};

}  // namespace lemon
