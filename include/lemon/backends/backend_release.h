// Backend releases: which archive of which release installs a
// recipe's backend on Linux, as Lemonade 9.4.1 builds it.
//
//   versions   resources/backend_versions.json (Lemonade's file and pins); a
//              copy in the cache folder, when present, wins, so a user can
//              pin another version without rebuilding
//   URL        {LEMONADE_RELEASES_URL or https://github.com}/{repo}/releases/
//              download/{version}/{asset}
//   folder     <cache>/bin/<recipe>/<backend>/, with version.txt
//
// Linux assets:
//   llamacpp  cpu     ggml-org/llama.cpp            llama-V-bin-ubuntu-x64.tar.gz
//             vulkan  ggml-org/llama.cpp            llama-V-bin-ubuntu-vulkan-x64.tar.gz
//             rocm    lemonade-sdk/llamacpp-rocm    llama-V-ubuntu-rocm-ARCH-x64.zip
//   whispercpp cpu    lemonade-sdk/whisper.cpp-builds whisper-V-linux-cpu-x86_64.tar.gz
//             vulkan  lemonade-sdk/whisper.cpp-builds whisper-V-linux-vulkan-x86_64.tar.gz
//   sd-cpp    cpu     superm1/stable-diffusion.cpp  sd-S-bin-Linux-Ubuntu-24.04-x86_64.zip
//             rocm    superm1/stable-diffusion.cpp  sd-S-bin-Linux-Ubuntu-24.04-x86_64-rocm.zip
// (S is the version with its middle part dropped: master-506-1f30df9 ->
// master-1f30df9; ARCH is the GPU's gfx target, e.g. gfx1151.) Everything
// else (metal, npu builds, flm, ryzenai-llm) has no Linux release:
// kUnsupportedOperation.
//
// Ownership/thread-safety: pure functions, apart from versions_file() and
// releases_base_url() reading the file system and environment.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon {

struct BackendRelease {
  std::string recipe;
  std::string backend;
  std::string version;     // the pinned tag
  std::string repo;        // "ggml-org/llama.cpp"
  std::string asset;       // the archive's file name
  std::string url;         // where it is downloaded from
  std::string executable;  // "llama-server", "whisper-server", "sd-server"
};

// The executable a recipe's backend runs ("" for recipes without one).
std::string backend_executable(std::string_view recipe);

// The pinned version of recipe/backend in `versions`. kInvalidRequest
// (param "recipe" or "backend") when the file has no such entry.
Result<std::string> pinned_version(const nlohmann::json& versions, std::string_view recipe,
                                   std::string_view backend);

// The release for recipe/backend at `version`. `rocm_arch` is the GPU's
// gfx target ("" when there is none: ROCm builds are then unsupported).
Result<BackendRelease> linux_release(std::string_view recipe, std::string_view backend,
                                     const std::string& version, std::string_view releases_base,
                                     std::string_view rocm_arch);

// LEMONADE_RELEASES_URL without a trailing '/', or "https://github.com".
std::string releases_base_url();

// <cache>/backend_versions.json when it exists, else the built-in one.
std::string versions_file(const std::string& cache_dir, const std::string& resources_dir);

}  // namespace lemon
