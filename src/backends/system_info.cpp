#include "lemon/backends/system_info.h"

#include <sys/utsname.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "lemon/backends/backend_installer.h"
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

// One GPU from /sys/class/drm/cardN (no vendor tools are run).
struct Gpu {
  std::string card;
  std::string vendor;  // "amd", "nvidia", "intel", "other"
  std::string pci_id;
  double vram_gb = 0;  // amdgpu's mem_info_vram_total, 0 when unknown
};

std::vector<Gpu> gpu_list() {
  std::vector<Gpu> gpus;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/class/drm", ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("card", 0) != 0 || name.find('-') != std::string::npos) {
      continue;
    }
    std::string vendor = read_first_line(entry.path() / "device" / "vendor");
    std::string device = read_first_line(entry.path() / "device" / "device");
    Gpu g;
    g.card = name;
    g.vendor = vendor == "0x1002"   ? "amd"
               : vendor == "0x10de" ? "nvidia"
               : vendor == "0x8086" ? "intel"
                                    : "other";
    g.pci_id = vendor;
    g.pci_id.append(":").append(device);
    std::string vram = read_first_line(entry.path() / "device" / "mem_info_vram_total");
    if (!vram.empty()) {
      g.vram_gb = std::strtod(vram.c_str(), nullptr) / (1024.0 * 1024.0 * 1024.0);
    }
    gpus.push_back(g);
  }
  return gpus;
}

// The gfx target of the first AMD GPU the kernel's KFD topology lists
// ("gfx1151" from gfx_target_version 110501), or "".
std::string amd_gfx_target() {
  std::error_code ec;
  for (const auto& node : fs::directory_iterator("/sys/class/kfd/kfd/topology/nodes", ec)) {
    std::ifstream in(node.path() / "properties");
    std::string key;
    long long value = 0;
    while (in >> key >> value) {
      if (key == "gfx_target_version" && value > 0) {
        long long major = value / 10000;
        long long minor = (value / 100) % 100;
        long long step = value % 100;
        std::ostringstream out;
        out << "gfx" << major << std::hex << minor << step;
        return out.str();
      }
    }
  }
  return {};
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
  std::string gfx;
};

// An AMD GPU with under 2 GiB of its own VRAM (or none reported) is taken
// for an integrated one (an APU's carve-out), as Lemonade's amd_igpu.
constexpr double kIgpuMaxVramGb = 2.0;

// Lemonade 11's one list of AMD GPUs: the integrated one first, each with
// "integrated"; only available ones.
nlohmann::json amd_gpus(const nlohmann::json& igpu, const nlohmann::json& dgpus) {
  nlohmann::json out = nlohmann::json::array();
  if (igpu.value("available", false)) {
    nlohmann::json g = igpu;
    g["integrated"] = true;
    out.push_back(std::move(g));
  }
  for (const auto& d : dgpus) {
    nlohmann::json g = d;
    g["integrated"] = false;
    out.push_back(std::move(g));
  }
  return out;
}

const Hardware& hardware() {
  static const Hardware hw = [] {
    Hardware h;
    auto gpus = gpu_list();
    h.gfx = amd_gfx_target();
    nlohmann::json igpu = {{"available", false}};
    nlohmann::json amd_dgpu = nlohmann::json::array();
    nlohmann::json nvidia_dgpu = nlohmann::json::array();
    nlohmann::json listed = nlohmann::json::array();
    for (const auto& g : gpus) {
      h.has_gpu = h.has_gpu || g.vendor != "other";
      listed.push_back({{"card", g.card}, {"vendor", g.vendor}, {"pci_id", g.pci_id}});
      nlohmann::json d = {
          {"name", g.card + " (" + g.pci_id + ")"}, {"vram_gb", g.vram_gb}, {"available", true}};
      if (g.vendor == "amd") {
        h.has_amd_gpu = true;
        if (!h.gfx.empty()) {
          d["family"] = h.gfx;
        }
        if (g.vram_gb < kIgpuMaxVramGb && !igpu["available"].get<bool>()) {
          igpu = d;
        } else {
          amd_dgpu.push_back(d);
        }
      } else if (g.vendor == "nvidia") {
        nvidia_dgpu.push_back(d);
      }
    }
    h.has_npu = has_amd_npu();
    nlohmann::json cpu = cpu_info();
    cpu["family"] = "x86_64";
    std::ostringstream mem;
    mem.precision(1);
    mem << std::fixed << memory_gb() << " GB";
    nlohmann::json npu = {{"available", h.has_npu}};
    if (h.has_npu) {
      npu["name"] = cpu["name"];
    }
    h.summary = {{"OS Version", os_version()},
                 {"Processor", cpu["name"]},
                 {"Physical Memory", mem.str()},
                 {"devices",
                  {{"cpu", cpu},
                   {"amd_igpu", igpu},
                   {"amd_dgpu", amd_dgpu},
                   {"amd_gpu", amd_gpus(igpu, amd_dgpu)},
                   {"nvidia_dgpu", nvidia_dgpu},
                   {"amd_npu", npu},
                   {"gpus", listed}}}};
    return h;
  }();
  return hw;
}

// One backend in Lemonade's shape (devices, state, message, action,
// version) plus ours (release_url, binary, binary_env).
nlohmann::json backend_entry(const BackendInstaller& installer, const std::string& recipe,
                             const std::string& backend, bool device_present,
                             nlohmann::json devices, const std::string& needs,
                             const std::string& cache_dir) {
  // FLM has one binary for its one backend: LEMONADE_FLM_BIN.
  BinaryQuery q{recipe, recipe == "flm" ? "" : backend, backend_executable(recipe)};
  const std::string install_cmd = "lemonade-server recipes --install " + recipe + ":" + backend;
  nlohmann::json e = {{"devices", device_present ? std::move(devices) : nlohmann::json::array()},
                      {"binary_env", binary_env_var(q)},
                      {"binary", nullptr}};
  auto set = [&](const char* state, const std::string& message, const std::string& action) {
    e["state"] = state;
    e["message"] = message;
    e["action"] = action;
  };
  if (!device_present) {
    set("unsupported", "Requires " + needs, "");
    return e;
  }
  BackendState st = installer.state(recipe, backend);
  if (!st.pinned_version.empty()) {
    e["release_url"] = st.release_url;
  }
  switch (st.kind) {
    case BackendState::Kind::kInstalled:
      set("installed", "", "");
      e["binary"] = st.executable;
      if (!st.version.empty()) {
        e["version"] = st.version;
      }
      return e;
    case BackendState::Kind::kUpdateRequired:
      set("update_required", "Backend update is required before use.", install_cmd);
      e["binary"] = st.executable;
      e["version"] = st.version;
      return e;
    case BackendState::Kind::kInstallable:
    case BackendState::Kind::kUnsupported:
      break;
  }
  // Not installed by the router: a binary on PATH still serves.
  auto found = locate_backend_binary(q, cache_dir);
  if (found.ok()) {
    set("installed", "", "");
    e["binary"] = *found;
    return e;
  }
  const char* var = std::getenv(binary_env_var(q).c_str());
  const bool bad_variable = var != nullptr && *var != '\0';  // e.g. a typo in the path
  if (st.kind == BackendState::Kind::kInstallable) {
    set("installable",
        bad_variable ? found.error().message() : "Backend is supported but not installed.",
        install_cmd);
    e["version"] = st.pinned_version;
  } else {
    set("unsupported", bad_variable ? found.error().message() : st.message, "");
  }
  return e;
}

}  // namespace

std::string rocm_gfx_target() {
  return hardware().gfx;
}

nlohmann::json system_info_json(const BackendInstaller& installer, const std::string& cache_dir,
                                const RecipeOptions& defaults) {
  const Hardware& hw = hardware();
  nlohmann::json out = hw.summary;
  const nlohmann::json gpu =
      hw.has_amd_gpu ? nlohmann::json({"amd_igpu"}) : nlohmann::json({"gpu"});
  auto entry = [&](const std::string& recipe, const std::string& backend, bool present,
                   nlohmann::json devices, const std::string& needs) {
    return backend_entry(installer, recipe, backend, present, std::move(devices), needs, cache_dir);
  };
  nlohmann::json recipes;
  recipes["llamacpp"] = {{"default_backend", defaults.string_value("llamacpp_backend")},
                         {"backends",
                          {{"cpu", entry("llamacpp", "cpu", true, {"cpu"}, "")},
                           {"vulkan", entry("llamacpp", "vulkan", hw.has_gpu, gpu, "a GPU")},
                           {"rocm", entry("llamacpp", "rocm", hw.has_amd_gpu, gpu, "an AMD GPU")},
                           {"metal", entry("llamacpp", "metal", false, {}, "macOS")}}}};
  recipes["whispercpp"] = {
      {"default_backend", defaults.string_value("whispercpp_backend")},
      {"backends",
       {{"cpu", entry("whispercpp", "cpu", true, {"cpu"}, "")},
        {"npu", entry("whispercpp", "npu", hw.has_npu, {"amd_npu"}, "an AMD NPU")},
        {"vulkan", entry("whispercpp", "vulkan", hw.has_gpu, gpu, "a GPU")}}}};
  recipes["sd-cpp"] = {{"default_backend", defaults.string_value("sd-cpp_backend")},
                       {"backends",
                        {{"cpu", entry("sd-cpp", "cpu", true, {"cpu"}, "")},
                         {"rocm", entry("sd-cpp", "rocm", hw.has_amd_gpu, gpu, "an AMD GPU")}}}};
  recipes["flm"] = {
      {"default_backend", "npu"},
      {"backends", {{"npu", entry("flm", "npu", hw.has_npu, {"amd_npu"}, "an AMD NPU")}}}};
  recipes["ryzenai-llm"] = {
      {"default_backend", "npu"},
      {"backends", {{"npu", entry("ryzenai-llm", "npu", hw.has_npu, {"amd_npu"}, "an AMD NPU")}}}};
  out["recipes"] = std::move(recipes);
  return out;
}

}  // namespace lemon
