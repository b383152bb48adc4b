// SystemDeviceMemory: the machine's memory per device, for the router's
// memory budget:
// - "ram": MemTotal and MemAvailable from /proc/meminfo;
// - "gpu<N>": NVIDIA GPUs from `nvidia-smi --query-gpu=index,memory.total,
//   memory.used` when it is on PATH (run with an argv, never a shell; PATH
//   is searched at construction and by rescan_tools(), never per read);
//   otherwise AMD GPUs from sysfs (mem_info_vram_total and _used of each
//   /sys/class/drm card that has them, in card order).
// - per process, the GPU memory nvidia-smi's compute apps hold
//   (`--query-compute-apps=pid,gpu_uuid,used_memory`, with
//   `--query-gpu=index,uuid` to name each GPU by its index).
//
// Thread-safety: read() may be called from any thread (serialized inside).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/process/process_launcher.h"
#include "lemon/router/device_memory.h"

namespace lemon::telemetry {

class SystemDeviceMemory final : public DeviceMemorySource {
 public:
  // `launcher` runs nvidia-smi (may be null: no NVIDIA GPUs); the roots are
  // "/proc" and "/sys" but for tests.
  explicit SystemDeviceMemory(ProcessLauncher* launcher, std::string proc_root = "/proc",
                              std::string sys_root = "/sys");
  std::vector<DeviceReading> read() override;
  std::vector<DeviceReading> read_ram() override;
  void rescan_tools() override;
  std::map<int, DeviceBytes> process_memory() override;

 private:
  std::vector<DeviceReading> read_gpus();
  // nvidia-smi's lines for `query` (in CSV, without header or units); empty
  // when it is not there, fails or takes over 5 s.
  std::vector<std::string> nvidia_smi_lines(const std::string& smi, const std::string& query);

  ProcessLauncher* const launcher_;
  const std::string proc_root_;
  const std::string sys_root_;
  Mutex mu_;
  std::string nvidia_smi_ LEMON_GUARDED_BY(mu_);  // "" when not found
};

// nvidia-smi's compute apps (`pid, gpu_uuid, used_memory` lines, MiB) as
// GPU memory per pid, each GPU named by the index `index, uuid` lines give
// it. Lines that do not parse, and apps on a GPU not listed, are left out;
// a pid on two GPUs has both.
std::map<int, DeviceBytes> parse_process_memory(const std::vector<std::string>& gpu_lines,
                                                const std::vector<std::string>& app_lines);

}  // namespace lemon::telemetry
