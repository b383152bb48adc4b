#include "lemon/backends/backend_release.h"

#include <cstdlib>
#include <filesystem>

namespace lemon {

namespace {

Error unsupported(std::string_view recipe, std::string_view backend, const std::string& why) {
  return Error(
      ErrorCode::kUnsupportedOperation,
      std::string(recipe) + ":" + std::string(backend) + " cannot be installed here: " + why,
      "backend");
}

// master-506-1f30df9 -> master-1f30df9 (Lemonade's sd.cpp asset names).
std::string sd_short_version(const std::string& version) {
  auto first = version.find('-');
  if (first == std::string::npos) {
    return version;
  }
  auto second = version.find('-', first + 1);
  if (second == std::string::npos) {
    return version;
  }
  return version.substr(0, first) + "-" + version.substr(second + 1);
}

}  // namespace

std::string backend_executable(std::string_view recipe) {
  if (recipe == "llamacpp") {
    return "llama-server";
  }
  if (recipe == "whispercpp") {
    return "whisper-server";
  }
  if (recipe == "sd-cpp") {
    return "sd-server";
  }
  if (recipe == "flm") {
    return "flm";
  }
  if (recipe == "ryzenai-llm") {
    return "ryzenai-server";
  }
  return {};
}

Result<std::string> pinned_version(const nlohmann::json& versions, std::string_view recipe,
                                   std::string_view backend) {
  auto r = versions.find(std::string(recipe));
  if (r == versions.end() || !r->is_object()) {
    return Error(ErrorCode::kInvalidRequest, "unknown recipe '" + std::string(recipe) + "'",
                 "recipe");
  }
  auto b = r->find(std::string(backend));
  if (b == r->end() || !b->is_string() || b->get<std::string>().empty()) {
    return Error(
        ErrorCode::kInvalidRequest,
        "unknown backend '" + std::string(backend) + "' for recipe '" + std::string(recipe) + "'",
        "backend");
  }
  return b->get<std::string>();
}

Result<BackendRelease> linux_release(std::string_view recipe, std::string_view backend,
                                     const std::string& version, std::string_view releases_base,
                                     std::string_view rocm_arch) {
  BackendRelease r;
  r.recipe = std::string(recipe);
  r.backend = std::string(backend);
  r.version = version;
  r.executable = backend_executable(recipe);
  if (recipe == "llamacpp" && backend == "cpu") {
    r.repo = "ggml-org/llama.cpp";
    r.asset = "llama-" + version + "-bin-ubuntu-x64.tar.gz";
  } else if (recipe == "llamacpp" && backend == "vulkan") {
    r.repo = "ggml-org/llama.cpp";
    r.asset = "llama-" + version + "-bin-ubuntu-vulkan-x64.tar.gz";
  } else if (recipe == "llamacpp" && backend == "rocm") {
    if (rocm_arch.empty()) {
      return unsupported(recipe, backend, "no AMD GPU with a known gfx target was found");
    }
    r.repo = "lemonade-sdk/llamacpp-rocm";
    r.asset = "llama-" + version + "-ubuntu-rocm-" + std::string(rocm_arch) + "-x64.zip";
  } else if (recipe == "whispercpp" && (backend == "cpu" || backend == "vulkan")) {
    r.repo = "lemonade-sdk/whisper.cpp-builds";
    r.asset = "whisper-" + version + "-linux-" + std::string(backend) + "-x86_64.tar.gz";
  } else if (recipe == "sd-cpp" && backend == "cpu") {
    r.repo = "superm1/stable-diffusion.cpp";
    r.asset = "sd-" + sd_short_version(version) + "-bin-Linux-Ubuntu-24.04-x86_64.zip";
  } else if (recipe == "sd-cpp" && backend == "rocm") {
    if (rocm_arch.empty()) {
      return unsupported(recipe, backend, "no AMD GPU with a known gfx target was found");
    }
    r.repo = "superm1/stable-diffusion.cpp";
    r.asset = "sd-" + sd_short_version(version) + "-bin-Linux-Ubuntu-24.04-x86_64-rocm.zip";
  } else {
    return unsupported(recipe, backend, "there is no Linux release of it");
  }
  r.url =
      std::string(releases_base) + "/" + r.repo + "/releases/download/" + version + "/" + r.asset;
  return r;
}

std::string releases_base_url() {
  const char* v = std::getenv("LEMONADE_RELEASES_URL");
  std::string base = v != nullptr && *v != '\0' ? v : "https://github.com";
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  return base;
}

std::string versions_file(const std::string& cache_dir, const std::string& resources_dir) {
  std::error_code ec;
  std::filesystem::path user = std::filesystem::path(cache_dir) / "backend_versions.json";
  if (!cache_dir.empty() && std::filesystem::is_regular_file(user, ec)) {
    return user.string();
  }
  return resources_dir + "/backend_versions.json";
}

}  // namespace lemon
