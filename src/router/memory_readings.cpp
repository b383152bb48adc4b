#include "memory_readings.h"

#include <algorithm>

namespace lemon {

std::vector<DeviceReading> MemoryReadings::latest() const {
  MutexLock lock(mu_);
  return last_;
}

std::vector<DeviceReading> MemoryReadings::read_for(const DeviceBytes& estimate) {
  const bool on_gpu = std::any_of(estimate.begin(), estimate.end(),
                                  [](const auto& charge) { return charge.first != kRamDevice; });
  std::vector<DeviceReading> readings = on_gpu ? source_->read() : source_->read_ram();
  MutexLock lock(mu_);
  if (!on_gpu) {
    for (const auto& d : last_) {
      if (d.device != kRamDevice) {
        readings.push_back(d);
      }
    }
  }
  last_ = readings;
  return readings;
}

std::vector<DeviceReading> MemoryReadings::read_all() {
  source_->rescan_tools();
  std::vector<DeviceReading> readings = source_->read();
  MutexLock lock(mu_);
  last_ = readings;
  return readings;
}

bool MemoryReadings::read_first() {
  std::vector<DeviceReading> readings = source_->read();
  MutexLock lock(mu_);
  if (!last_.empty()) {
    return false;
  }
  last_ = std::move(readings);
  return true;
}

}  // namespace lemon
