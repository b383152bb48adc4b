#include "lemon/telemetry/system_stats.h"
#include "lemon/core/mutex.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "lemon/process/executable_search.h"

namespace lemon::telemetry {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::optional<double> read_number(const fs::path& path) {
  std::ifstream in(path);
  double v = 0.0;
  if (in >> v) {
    return v;
  }
  return std::nullopt;
}

double round1(double v) {
  return std::round(v * 10.0) / 10.0;
}

}  // namespace

nlohmann::json SystemStats::to_json() const {
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"cpu_percent", opt(cpu_percent)},
          {"memory_gb", memory_gb},
          {"gpu_percent", opt(gpu_percent)},
          {"vram_gb", opt(vram_gb)},
          {"npu_percent", opt(npu_percent)}};
}

SystemStatsReader::SystemStatsReader(ProcessLauncher* launcher, std::string sys_root,
                                     std::string proc_root)
    : launcher_(launcher), sys_root_(std::move(sys_root)), proc_root_(std::move(proc_root)) {}

std::optional<SystemStatsReader::CpuSample> SystemStatsReader::cpu_sample() const {
  std::ifstream in(proc_root_ + "/stat");
  std::string label;
  if (!(in >> label) || label != "cpu") {
    return std::nullopt;
  }
  std::vector<std::uint64_t> fields;
  std::uint64_t v = 0;
  while (fields.size() < 8 && in >> v) {
    fields.push_back(v);
  }
  if (fields.size() < 4) {
    return std::nullopt;
  }
  CpuSample s;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    s.total += fields[i];
  }
  // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
  s.busy = s.total - fields[3] - (fields.size() > 4 ? fields[4] : 0);
  s.at = Clock::now();
  return s;
}

void SystemStatsReader::read_amd_gpus(SystemStats& out) const {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(sys_root_ + "/class/drm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("card", 0) != 0 || name.find('-') != std::string::npos) {
      continue;  // connectors such as card0-DP-1
    }
    const fs::path device = entry.path() / "device";
    if (auto busy = read_number(device / "gpu_busy_percent")) {
      out.gpu_percent = std::max(out.gpu_percent.value_or(0.0), *busy);
    }
    if (auto used = read_number(device / "mem_info_vram_used")) {
      out.vram_gb = out.vram_gb.value_or(0.0) + *used / (1024.0 * 1024.0 * 1024.0);
    }
  }
}

void SystemStatsReader::read_nvidia_gpus(SystemStats& out) {
  if (launcher_ == nullptr) {
    return;
  }
  if (Clock::now() - nvidia_read_ >= std::chrono::seconds(1)) {
    nvidia_read_ = Clock::now();
    nvidia_percent_.reset();
    nvidia_vram_gb_.reset();
    const std::string exe = find_on_path("nvidia-smi");
    if (!exe.empty()) {
      SpawnSpec spec;
      spec.executable = exe;
      spec.args = {"--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"};
      spec.log_tag = "nvidia-smi";
      auto child = launcher_->spawn(spec);
      if (child.ok()) {
        if ((*child)->wait_exit_until(Clock::now() + std::chrono::seconds(5))) {
          for (const auto& line : (*child)->last_lines(64)) {
            double percent = 0.0;
            double mib = 0.0;
            char comma = 0;
            std::istringstream fields(line);
            if (fields >> percent >> comma >> mib && comma == ',') {
              nvidia_percent_ = std::max(nvidia_percent_.value_or(0.0), percent);
              nvidia_vram_gb_ = nvidia_vram_gb_.value_or(0.0) + mib / 1024.0;
            }
          }
        } else {
          (*child)->terminate(std::chrono::milliseconds(0));
        }
      }
    }
  }
  if (nvidia_percent_) {
    out.gpu_percent = std::max(out.gpu_percent.value_or(0.0), *nvidia_percent_);
  }
  if (nvidia_vram_gb_) {
    out.vram_gb = out.vram_gb.value_or(0.0) + *nvidia_vram_gb_;
  }
}

SystemStats SystemStatsReader::read() {
  MutexLock lock(mu_);
  SystemStats out;
  auto now = cpu_sample();
  if (now && (!last_cpu_ || now->at - last_cpu_->at > std::chrono::seconds(10))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    last_cpu_ = now;
    now = cpu_sample();
  }
  if (now && last_cpu_ && now->total > last_cpu_->total) {
    out.cpu_percent = round1(100.0 * static_cast<double>(now->busy - last_cpu_->busy) /
                             static_cast<double>(now->total - last_cpu_->total));
  }
  if (now) {
    last_cpu_ = now;
  }
  long total_kb = 0;
  long available_kb = 0;
  std::ifstream meminfo(proc_root_ + "/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    long value = 0;
    if (!(fields >> key >> value)) {
      continue;
    }
    if (key == "MemTotal:") {
      total_kb = value;
    } else if (key == "MemAvailable:") {
      available_kb = value;
    }
  }
  out.memory_gb = round1(static_cast<double>(total_kb - available_kb) / (1024.0 * 1024.0));
  read_amd_gpus(out);
  read_nvidia_gpus(out);
  if (out.gpu_percent) {
    out.gpu_percent = round1(*out.gpu_percent);
  }
  if (out.vram_gb) {
    out.vram_gb = round1(*out.vram_gb);
  }
  return out;
}

}  // namespace lemon::telemetry
