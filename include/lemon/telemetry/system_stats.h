// SystemStats: GET /system-stats, in Lemonade 9.4.1's shape
// ({"cpu_percent","memory_gb","gpu_percent","vram_gb"}, plus "npu_percent"),
// null where the machine cannot tell (Lemonade 9.4.1's shape; docs/api.md
// "GET system-stats").
//
// - CPU: busy share of all cores since the previous reading (/proc/stat); a
//   first reading, or one after 10 s, samples for 100 ms.
// - Memory: MemTotal - MemAvailable (/proc/meminfo), in GB.
// - GPU: AMD from sysfs (gpu_busy_percent, mem_info_vram_used); NVIDIA from
//   `nvidia-smi --query-gpu=utilization.gpu,memory.used` when it is on PATH
//   (run with an argv, never a shell, at most once a second). The busiest GPU's
//   percentage; VRAM used summed over GPUs.
// - NPU: the amdxdna driver reports no busy figure: null.
//
// Thread-safety: read() may be called from any thread (serialized inside).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/mutex.h"
#include "lemon/process/process_launcher.h"

namespace lemon::telemetry {

struct SystemStats {
  std::optional<double> cpu_percent;
  double memory_gb = 0.0;
  std::optional<double> gpu_percent;
  std::optional<double> vram_gb;
  std::optional<double> npu_percent;
  nlohmann::json to_json() const;
};

class SystemStatsReader {
 public:
  // `sys_root` and `proc_root` are "/sys" and "/proc" but for tests;
  // `launcher` runs nvidia-smi (may be null: no NVIDIA figures).
  SystemStatsReader(ProcessLauncher* launcher, std::string sys_root = "/sys",
                    std::string proc_root = "/proc");
  SystemStats read();

 private:
  struct CpuSample {
    std::uint64_t busy = 0;
    std::uint64_t total = 0;
    std::chrono::steady_clock::time_point at{};
  };
  std::optional<CpuSample> cpu_sample() const;
  void read_amd_gpus(SystemStats& out) const;
  void read_nvidia_gpus(SystemStats& out) LEMON_REQUIRES(mu_);

  ProcessLauncher* const launcher_;
  const std::string sys_root_;
  const std::string proc_root_;
  Mutex mu_;
  std::optional<CpuSample> last_cpu_ LEMON_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point nvidia_read_ LEMON_GUARDED_BY(mu_){};
  std::optional<double> nvidia_percent_ LEMON_GUARDED_BY(mu_);
  std::optional<double> nvidia_vram_gb_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon::telemetry
