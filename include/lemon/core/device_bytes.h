// Memory per device (issue #13 §1): "ram" for system memory, "gpu0",
// "gpu1", ... for each GPU's own memory, in the order the machine lists
// them (nvidia-smi's index, or /sys/class/drm's cards for AMD).
//
// Thread-safety: values.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace lemon {

using DeviceBytes = std::map<std::string, std::int64_t>;  // device -> bytes

inline constexpr const char* kRamDevice = "ram";
inline std::string gpu_device(int index) {
  return "gpu" + std::to_string(index);
}

}  // namespace lemon
