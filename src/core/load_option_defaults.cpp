#include "lemon/core/load_option_defaults.h"

#include <filesystem>
#include <system_error>

namespace lemon {

const std::vector<std::string>& valid_llamacpp_backends() {
  static const std::vector<std::string> v = {"vulkan", "rocm", "metal", "cpu"};
  return v;
}

const std::vector<std::string>& valid_whispercpp_backends() {
  static const std::vector<std::string> v = {"cpu", "npu", "vulkan"};
  return v;
}

const std::vector<std::string>& valid_sdcpp_backends() {
  static const std::vector<std::string> v = {"cpu", "rocm"};
  return v;
}

nlohmann::json builtin_load_option_defaults() {
  nlohmann::json out = nlohmann::json::object();
  out["ctx_size"] = 4096;
  out["parallel"] = 1;
  // Platform choice for llama.cpp: a DRM render node means a GPU that Vulkan
  // can drive, so prefer it (Lemonade's default on Linux is vulkan too); a
  // machine without one (containers, CI, headless servers) gets the CPU build,
  // which always works. ROCm is never chosen automatically: it needs a
  // specific AMD GPU and runtime, so users opt in with --llamacpp rocm.
  std::error_code ec;
  bool has_render_node = std::filesystem::exists("/dev/dri/renderD128", ec);
  out["llamacpp_backend"] = has_render_node ? "vulkan" : "cpu";
  out["llamacpp_args"] = "";
  out["whispercpp_backend"] = "cpu";
  out["sd-cpp_backend"] = "cpu";
  out["steps"] = 20;
  out["cfg_scale"] = 7.0;
  out["width"] = 512;
  out["height"] = 512;
  return out;
}

}  // namespace lemon
