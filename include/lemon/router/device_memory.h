// DeviceMemorySource: how much memory each device has and has free now.
// The router asks it when it admits a load (system RAM only
// for a model placed on the CPU) and every
// --memory-poll-interval; tests fake it.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <vector>

#include "lemon/router/memory_policy.h"

namespace lemon {

class DeviceMemorySource {
 public:
  virtual ~DeviceMemorySource() = default;
  // "ram" first, then "gpu0", "gpu1", ...; devices it cannot read are left out.
  virtual std::vector<DeviceReading> read() = 0;
  // System RAM alone: what a load placed on the CPU needs, without asking
  // any GPU (no nvidia-smi, no sysfs).
  virtual std::vector<DeviceReading> read_ram() { return read(); }
  // Looks for the tools it reads GPUs with again (nvidia-smi on PATH); the
  // memory poller calls it, so a load never searches.
  virtual void rescan_tools() {}
};

}  // namespace lemon
