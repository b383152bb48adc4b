// DeviceMemorySource: how much memory each device has and has free now
// (issue #13 §1). The router asks it when it admits a load and every
// --memory-poll-interval; tests fake it.
//
// Thread-safety: read() may be called from any thread.
#pragma once

#include <vector>

#include "lemon/router/memory_policy.h"

namespace lemon {

class DeviceMemorySource {
 public:
  virtual ~DeviceMemorySource() = default;
  // "ram" first, then "gpu0", "gpu1", ...; devices it cannot read are left out.
  virtual std::vector<DeviceReading> read() = 0;
};

}  // namespace lemon
