// SystemInfo: what this machine is and which recipes and backends it can run
// (GET /system-info). Hardware is read from /proc, /sys and /etc/os-release
// once; which backend binaries are present is looked up on every call (it
// changes when the user installs one).
//
// Shape (Lemonade 9.4.1's keys, plus detail):
//   {"OS Version", "Processor", "Physical Memory",
//    "devices": {"cpu": {...}, "gpus": [...], "amd_npu": {...}},
//    "recipes": {"llamacpp": {"default_backend": "cpu",
//                             "backends": {"cpu": {"devices": [...], "supported": true,
//                                                  "state": "installed", "binary": "...",
//                                                  "binary_env": "LEMONADE_LLAMACPP_CPU_BIN"}}},
//                ...}}
// state is "installed" (binary found), "not_installed" (supported here but no
// binary) or "unsupported" (this machine lacks the device).
//
// Thread-safety: may be called from any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lemon/models/recipe_options.h"

namespace lemon {

nlohmann::json system_info_json(const std::string& cache_dir, const RecipeOptions& defaults);

}  // namespace lemon
