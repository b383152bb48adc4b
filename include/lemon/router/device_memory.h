// DeviceMemorySource: how much memory each device has and has free now.
// The router asks it when it admits a load (system RAM only
// for a model placed on the CPU) and every
// --memory-poll-interval; tests fake it.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
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
  // The GPU memory each process holds, by pid, as the device's own tool
  // reports it ({"gpu<N>": bytes}); empty where no tool tells (sysfs has no
  // per-process figure). The memory poller asks it once per poll.
  virtual std::map<int, DeviceBytes> process_memory() { return {}; }
};

}  // namespace lemon
