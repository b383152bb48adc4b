// The load options' built-in defaults, bounds and choices, shared by the
// models' RecipeOptions (a /load request, recipe_options.json) and the
// command line (lemonade-router's and lemonade-server's options), so the
// two never disagree.
//
// Thread-safety: pure functions and constants.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lemon {

// The most llama.cpp slots one model may have (`parallel`).
inline constexpr int kMaxParallel = 1024;
// The most replicas (backend processes) one model may have (`max_replicas`).
inline constexpr int kMaxReplicas = 64;

// Valid backend names per option key; used to validate CLI and /load values.
const std::vector<std::string>& valid_llamacpp_backends();    // vulkan rocm metal cpu
const std::vector<std::string>& valid_whispercpp_backends();  // cpu npu vulkan
const std::vector<std::string>& valid_sdcpp_backends();       // cpu rocm

// Every load option's built-in default, keyed as RecipeOptions keys them:
// ctx_size 4096, parallel 1, llamacpp_backend (vulkan where a DRM render
// node shows a GPU Vulkan can drive, else cpu), llamacpp_args "",
// whispercpp_backend and sd-cpp_backend cpu, steps 20, cfg_scale 7.0,
// width and height 512. Looks at the machine on each call.
nlohmann::json builtin_load_option_defaults();

}  // namespace lemon
