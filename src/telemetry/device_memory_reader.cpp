#include "lemon/telemetry/device_memory_reader.h"
#include "lemon/core/mutex.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lemon/process/executable_search.h"

namespace lemon::telemetry {
namespace {

namespace fs = std::filesystem;
constexpr std::int64_t MiB = std::int64_t{1024} * 1024;

std::optional<std::int64_t> read_int(const fs::path& path) {
  std::ifstream in(path);
  long long v = 0;
  if (in >> v) {
    return v;
  }
  return std::nullopt;
}

// The number in "card<N>" (sysfs) or "gpu<N>" (ours), for numeric order:
// card10 comes after card2.
int trailing_number(const std::string& name) {
  std::size_t digits = name.find_first_of("0123456789");
  return digits == std::string::npos ? -1 : std::atoi(name.c_str() + digits);
}

}  // namespace

SystemDeviceMemory::SystemDeviceMemory(ProcessLauncher* launcher, std::string proc_root,
                                       std::string sys_root)
    : launcher_(launcher), proc_root_(std::move(proc_root)), sys_root_(std::move(sys_root)) {
  rescan_tools();
}

void SystemDeviceMemory::rescan_tools() {
  std::string found = launcher_ != nullptr ? find_on_path("nvidia-smi") : std::string();
  MutexLock lock(mu_);
  nvidia_smi_ = std::move(found);
}

std::vector<DeviceReading> SystemDeviceMemory::read() {
  std::vector<DeviceReading> out = read_ram();
  auto gpus = read_gpus();
  out.insert(out.end(), gpus.begin(), gpus.end());
  return out;
}

std::vector<DeviceReading> SystemDeviceMemory::read_ram() {
  std::vector<DeviceReading> out;
  {
    std::ifstream meminfo(proc_root_ + "/meminfo");
    std::string line;
    std::int64_t total = 0;
    std::int64_t available = -1;
    while (std::getline(meminfo, line)) {
      std::istringstream fields(line);
      std::string key;
      long long kb = 0;
      if (!(fields >> key >> kb)) {
        continue;
      }
      if (key == "MemTotal:") {
        total = kb * 1024;
      } else if (key == "MemAvailable:") {
        available = kb * 1024;
      }
    }
    if (total > 0 && available >= 0) {
      out.push_back({kRamDevice, total, available});
    }
  }
  return out;
}

std::vector<DeviceReading> SystemDeviceMemory::read_gpus() {
  MutexLock lock(mu_);  // one nvidia-smi at a time
  std::vector<DeviceReading> gpus;
  const std::string smi = nvidia_smi_;
  if (!smi.empty()) {
    SpawnSpec spec;
    spec.executable = smi;
    spec.args = {"--query-gpu=index,memory.total,memory.used", "--format=csv,noheader,nounits"};
    spec.log_tag = "nvidia-smi";
    if (auto child = launcher_->spawn(spec); child.ok()) {
      if ((*child)->wait_exit_until(std::chrono::steady_clock::now() + std::chrono::seconds(5))) {
        for (const auto& line : (*child)->last_lines(64)) {
          std::istringstream fields(line);
          int index = -1;
          double total_mib = 0;
          double used_mib = 0;
          char c1 = 0;
          char c2 = 0;
          if (fields >> index >> c1 >> total_mib >> c2 >> used_mib && c1 == ',' && c2 == ',' &&
              index >= 0) {
            const auto total = static_cast<std::int64_t>(total_mib * MiB);
            const auto used = static_cast<std::int64_t>(used_mib * MiB);
            gpus.push_back({gpu_device(index), total, std::max<std::int64_t>(0, total - used)});
          }
        }
      } else {
        (*child)->terminate(std::chrono::milliseconds(0));
      }
    }
  }
  if (gpus.empty()) {
    std::vector<fs::path> cards;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(sys_root_ + "/class/drm", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("card", 0) == 0 && name.find('-') == std::string::npos) {
        cards.push_back(entry.path());
      }
    }
    std::sort(cards.begin(), cards.end(), [](const fs::path& a, const fs::path& b) {
      return trailing_number(a.filename().string()) < trailing_number(b.filename().string());
    });
    int index = 0;
    for (const auto& card : cards) {
      auto total = read_int(card / "device/mem_info_vram_total");
      auto used = read_int(card / "device/mem_info_vram_used");
      if (total && used && *total > 0) {
        gpus.push_back({gpu_device(index++), *total, std::max<std::int64_t>(0, *total - *used)});
      }
    }
  }
  std::sort(gpus.begin(), gpus.end(), [](const DeviceReading& a, const DeviceReading& b) {
    return trailing_number(a.device) < trailing_number(b.device);
  });
  return gpus;
}

}  // namespace lemon::telemetry
