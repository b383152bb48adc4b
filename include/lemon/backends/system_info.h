// SystemInfo: what this machine is and which recipes and backends it can run
// (GET /system-info). Hardware is read from /proc, /sys and /etc/os-release
// once; which backend binaries are present is looked up on every call (it
// changes when the user installs one).
//
// Shape (Lemonade 9.4.1's, docs/server/server_spec.md at the tag):
//   {"OS Version", "Processor", "Physical Memory",
//    "devices": {"cpu": {name, cores, threads, available, family},
//                "amd_igpu": {available, ...}, "amd_dgpu": [...],
//                "nvidia_dgpu": [...], "amd_npu": {available, ...},
//                "gpus": [every DRM card, ours]},
//    "recipes": {"<recipe>": {"default_backend",
//                "backends": {"<backend>": {devices, state, message, action,
//                                           version?, release_url?, binary,
//                                           binary_env}}}}}
// state: "installed" (an install, the LEMONADE_*_BIN variable or PATH
// provides it), "installable", "update_required" (installed version differs
// from the pin) or "unsupported" (the device is missing or there is no Linux
// release). Devices come from /proc and /sys only; an AMD GPU with under
// 2 GiB of VRAM counts as amd_igpu.
//
// Thread-safety: may be called from any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lemon/backends/backend_installer.h"
#include "lemon/models/recipe_options.h"

namespace lemon {

nlohmann::json system_info_json(const BackendInstaller& installer, const std::string& cache_dir,
                                const RecipeOptions& defaults);

// The AMD GPU's gfx target ("gfx1151") for ROCm release names, or "".
std::string rocm_gfx_target();

}  // namespace lemon
