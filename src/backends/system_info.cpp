#include "lemon/backends/system_info.h"

#include <sys/utsname.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "lemon/backends/binary_locator.h"

namespace lemon {
namespace fs = std::filesystem;

namespace {

std::string read_first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string os_version() {
  std::ifstream in("/etc/os-release");
  std::string line;
  std::string pretty = "Linux";
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      pretty = line.substr(12);
      if (pretty.size() >= 2 && pretty.front() == '"') {
        pretty = pretty.substr(1, pretty.size() - 2);
      }
    }
  }
  utsname u{};
  if (::uname(&u) == 0) {
    pretty += std::string(" (kernel ") + u.release + ", " + u.machine + ")";
  }
  return pretty;
}

nlohmann::json cpu_info() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string name;
  int threads = 0;
  std::set<std::string> cores;
  std::string physical;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "processor") {
      ++threads;
    } else if (key == "model name" && name.empty()) {
      name = value;
    } else if (key == "physical id") {
      physical = value;
    } else if (key == "core id") {
      std::string core = physical;
      core += ':';
      core += value;
      cores.insert(std::move(core));
    }
  }
  int core_count = cores.empty() ? threads : static_cast<int>(cores.size());
  return {{"name", name.empty() ? "unknown" : name},
          {"cores", core_count},
          {"threads", threads},
          {"available", true}};
}

double memory_gb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  long long kb = 0;
  while (in >> key >> kb) {
    if (key == "MemTotal:") {
      return static_cast<double>(kb) / (1024.0 * 1024.0);
    }
    in.ignore(256, '\n');
  }
  return 0.0;
}

nlohmann::json gpu_list() {
  nlohmann::json gpus = nlohmann::json::array();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/class/drm", ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("card", 0) != 0 || name.find('-') != std::string::npos) {
      continue;
    }
    std::string vendor = read_first_line(entry.path() / "device" / "vendor");
    std::string device = read_first_line(entry.path() / "device" / "device");
    const char* vendor_name = vendor == "0x1002"   ? "amd"
                              : vendor == "0x10de" ? "nvidia"
                              : vendor == "0x8086" ? "intel"
                                                   : "other";
    gpus.push_back(
        {{"card", name}, {"vendor", vendor_name}, {"pci_id", vendor.append(":").append(device)}});
  }
  return gpus;
}

bool has_amd_npu() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/class/accel", ec)) {
    auto driver = fs::read_symlink(entry.path() / "device" / "driver", ec);
    if (!ec && driver.filename() == "amdxdna") {
      return true;
    }
  }
  return false;
}

struct Hardware {
  nlohmann::json summary;
  bool has_gpu = false;
  bool has_amd_gpu = false;
  bool has_npu = false;
};

const Hardware& hardware() {
  static const Hardware hw = [] {
    Hardware h;
    nlohmann::json gpus = gpu_list();
    h.has_gpu = !gpus.empty();
    for (const auto& g : gpus) {
      h.has_amd_gpu = h.has_amd_gpu || g["vendor"] == "amd";
    }
    h.has_npu = has_amd_npu();
    nlohmann::json cpu = cpu_info();
    std::ostringstream mem;
    mem.precision(1);
    mem << std::fixed << memory_gb() << " GB";
    h.summary = {
        {"OS Version", os_version()},
        {"Processor", cpu["name"]},
        {"Physical Memory", mem.str()},
        {"devices", {{"cpu", cpu}, {"gpus", gpus}, {"amd_npu", {{"available", h.has_npu}}}}}};
    return h;
  }();
  return hw;
}

nlohmann::json backend_entry(const std::string& recipe, const std::string& backend,
                             const std::string& binary, bool supported, nlohmann::json devices,
                             const std::string& cache_dir) {
  BinaryQuery q{recipe, backend, binary};
  nlohmann::json e = {
      {"devices", std::move(devices)}, {"supported", supported}, {"binary_env", binary_env_var(q)}};
  if (!supported) {
    e["state"] = "unsupported";
    e["binary"] = nullptr;
    return e;
  }
  auto found = locate_backend_binary(q, cache_dir);
  e["state"] = found.ok() ? "installed" : "not_installed";
  e["binary"] = found.ok() ? nlohmann::json(*found) : nlohmann::json(nullptr);
  if (!found.ok()) {
    e["message"] = found.error().message();
  }
  return e;
}

}  // namespace

nlohmann::json system_info_json(const std::string& cache_dir, const RecipeOptions& defaults) {
  const Hardware& hw = hardware();
  nlohmann::json out = hw.summary;
  auto gpu_devices = [&] { return hw.has_gpu ? nlohmann::json({"gpu"}) : nlohmann::json::array(); };
  nlohmann::json recipes;
  recipes["llamacpp"] = {
      {"default_backend", defaults.string_value("llamacpp_backend")},
      {"backends",
       {{"cpu", backend_entry("llamacpp", "cpu", "llama-server", true, {"cpu"}, cache_dir)},
        {"vulkan",
         backend_entry("llamacpp", "vulkan", "llama-server", hw.has_gpu, gpu_devices(), cache_dir)},
        {"rocm", backend_entry("llamacpp", "rocm", "llama-server", hw.has_amd_gpu, gpu_devices(),
                               cache_dir)},
        {"metal", backend_entry("llamacpp", "metal", "llama-server", false, {}, cache_dir)}}}};
  recipes["whispercpp"] = {
      {"default_backend", defaults.string_value("whispercpp_backend")},
      {"backends",
       {{"cpu", backend_entry("whispercpp", "cpu", "whisper-server", true, {"cpu"}, cache_dir)},
        {"npu",
         backend_entry("whispercpp", "npu", "whisper-server", hw.has_npu, {"npu"}, cache_dir)},
        {"vulkan", backend_entry("whispercpp", "vulkan", "whisper-server", hw.has_gpu,
                                 gpu_devices(), cache_dir)}}}};
  recipes["sd-cpp"] = {
      {"default_backend", defaults.string_value("sd-cpp_backend")},
      {"backends",
       {{"cpu", backend_entry("sd-cpp", "cpu", "sd-server", true, {"cpu"}, cache_dir)},
        {"rocm",
         backend_entry("sd-cpp", "rocm", "sd-server", hw.has_amd_gpu, gpu_devices(), cache_dir)}}}};
  recipes["flm"] = {
      {"default_backend", "npu"},
      {"backends", {{"npu", backend_entry("flm", "", "flm", hw.has_npu, {"npu"}, cache_dir)}}}};
  recipes["ryzenai-llm"] = {{"default_backend", "npu"},
                            {"backends",
                             {{"npu", backend_entry("ryzenai-llm", "npu", "ryzenai-server",
                                                    hw.has_npu, {"npu"}, cache_dir)}}}};
  out["recipes"] = std::move(recipes);
  return out;
}

}  // namespace lemon
