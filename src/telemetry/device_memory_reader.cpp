#include "lemon/telemetry/device_memory_reader.h"
#include "lemon/core/mutex.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
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

std::vector<std::string> SystemDeviceMemory::nvidia_smi_lines(const std::string& smi,
                                                              const std::string& query) {
  SpawnSpec spec;
  spec.executable = smi;
  spec.args = {query, "--format=csv,noheader,nounits"};
  spec.log_tag = "nvidia-smi";
  auto child = launcher_->spawn(spec);
  if (!child.ok()) {
    return {};
  }
  if (!(*child)->wait_exit_until(std::chrono::steady_clock::now() + std::chrono::seconds(5))) {
    (*child)->terminate(std::chrono::milliseconds(0));
    return {};
  }
  return (*child)->last_lines(256);
}

std::map<int, DeviceBytes> SystemDeviceMemory::process_memory() {
  MutexLock lock(mu_);  // one nvidia-smi at a time
  const std::string smi = nvidia_smi_;
  if (smi.empty()) {
    return {};
  }
  const auto gpus = nvidia_smi_lines(smi, "--query-gpu=index,uuid");
  if (gpus.empty()) {
    return {};
  }
  return parse_process_memory(
      gpus, nvidia_smi_lines(smi, "--query-compute-apps=pid,gpu_uuid,used_memory"));
}

std::vector<DeviceReading> SystemDeviceMemory::read_gpus() {
  MutexLock lock(mu_);  // one nvidia-smi at a time
  std::vector<DeviceReading> gpus;
  const std::string smi = nvidia_smi_;
  if (!smi.empty()) {
    for (const auto& line : nvidia_smi_lines(smi, "--query-gpu=index,memory.total,memory.used")) {
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

namespace {

// The comma-separated fields of `line`, each trimmed.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) {
    const auto first = field.find_first_not_of(" \t\r");
    const auto last = field.find_last_not_of(" \t\r");
    out.push_back(first == std::string::npos ? "" : field.substr(first, last - first + 1));
  }
  return out;
}

std::optional<long long> whole_number(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 15) {
    return std::nullopt;
  }
  return std::stoll(text);
}

}  // namespace

std::map<int, DeviceBytes> parse_process_memory(const std::vector<std::string>& gpu_lines,
                                                const std::vector<std::string>& app_lines) {
  std::map<std::string, std::string> device_of_uuid;
  for (const auto& line : gpu_lines) {
    const auto f = csv_fields(line);
    if (f.size() == 2 && !f[1].empty()) {
      if (auto index = whole_number(f[0])) {
        device_of_uuid[f[1]] = gpu_device(static_cast<int>(*index));
      }
    }
  }
  std::map<int, DeviceBytes> out;
  for (const auto& line : app_lines) {
    const auto f = csv_fields(line);
    if (f.size() != 3) {
      continue;
    }
    const auto pid = whole_number(f[0]);
    const auto mib = whole_number(f[2]);
    const auto device = device_of_uuid.find(f[1]);
    if (pid && mib && *pid > 0 && *pid <= std::numeric_limits<int>::max() &&
        device != device_of_uuid.end()) {
      out[static_cast<int>(*pid)][device->second] += *mib * MiB;
    }
  }
  return out;
}

}  // namespace lemon::telemetry
