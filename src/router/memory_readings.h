// MemoryReadings: each device's memory as the router last read it, from
// RouterConfig::memory (a DeviceMemorySource; none: no memory limit). The
// housekeeper reads every device each --memory-poll-interval; a load reads
// what its admission depends on (read_for). Admission, the published
// devices and /health use the last reading.
//
// Thread-safety: every method from any thread. Reading a device happens
// without the lock, which is a leaf and guards only the last reading.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "lemon/core/device_bytes.h"
#include "lemon/core/mutex.h"
#include "lemon/router/device_memory.h"

namespace lemon {

class MemoryReadings {
 public:
  explicit MemoryReadings(std::shared_ptr<DeviceMemorySource> source)
      : source_(std::move(source)) {}

  // A memory source is configured: admission and the memory watch are on.
  bool on() const { return source_ != nullptr; }
  std::vector<DeviceReading> latest() const LEMON_EXCLUDES(mu_);
  // The readings a load charged `estimate` is admitted against, kept as
  // the latest: system RAM alone read now for a model on the CPU (the GPUs
  // keep their last reading, so such a load never runs nvidia-smi or reads
  // sysfs), every device afresh for one on a GPU.
  std::vector<DeviceReading> read_for(const DeviceBytes& estimate) LEMON_EXCLUDES(mu_);
  // Every device afresh (the tools looked for again first), kept.
  std::vector<DeviceReading> read_all() LEMON_EXCLUDES(mu_);
  // At start: every device, kept unless a load read some first. True when
  // it kept them.
  bool read_first() LEMON_EXCLUDES(mu_);
  // The source's GPU memory per process (DeviceMemorySource::process_memory);
  // empty without a source. Not kept.
  std::map<int, DeviceBytes> process_memory() {
    return source_ != nullptr ? source_->process_memory() : std::map<int, DeviceBytes>{};
  }

 private:
  const std::shared_ptr<DeviceMemorySource> source_;
  mutable Mutex mu_;
  std::vector<DeviceReading> last_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon
