// Memory per device: "ram" for system memory, "gpu0",
// "gpu1", ... for each GPU's own memory, in the order the machine lists
// them (nvidia-smi's index, or /sys/class/drm's cards for AMD); and the
// budget of it the models may use (--memory-budget).
//
// Thread-safety: values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace lemon {

using DeviceBytes = std::map<std::string, std::int64_t>;  // device -> bytes

inline constexpr const char* kRamDevice = "ram";
inline std::string gpu_device(int index) {
  return "gpu" + std::to_string(index);
}

// --memory-budget: a fraction of what is free plus what the router's own
// servers hold (default 0.8), or an absolute size for system RAM.
struct BudgetRule {
  double fraction = 0.8;
  std::optional<std::int64_t> ram_bytes;  // an absolute budget for "ram"
  // Parses "80%", "0.8" (a fraction), "24G", "512M", "1073741824"; nullopt
  // when malformed or out of range.
  static std::optional<BudgetRule> parse(const std::string& text);
};

}  // namespace lemon
