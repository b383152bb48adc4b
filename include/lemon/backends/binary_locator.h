// Finding a backend's executable, in
// order: the LEMONADE_<RECIPE>_<BACKEND>_BIN variable (recipe upper-cased
// without '-', e.g. LEMONADE_LLAMACPP_CPU_BIN, LEMONADE_SDCPP_ROCM_BIN,
// LEMONADE_FLM_BIN), then PATH, then <cache_dir>/bin/<recipe>/<backend>/
// searched recursively (Lemonade's install layout).
//
// Thread-safety: pure apart from reading the environment and file system.
#pragma once

#include <string>

#include "lemon/core/error.h"

namespace lemon {

struct BinaryQuery {
  std::string recipe;   // "llamacpp", "flm", "ryzenai-llm", "whispercpp", "sd-cpp"
  std::string backend;  // "cpu", "vulkan", "npu", ... or "" for none
  std::string binary;   // "llama-server", "flm", ...
};

// "LEMONADE_LLAMACPP_CPU_BIN" for {llamacpp, cpu}.
std::string binary_env_var(const BinaryQuery& query);

// The absolute path of an executable, or kBackendBinaryMissing naming every
// place that was searched. A set variable that points nowhere is an error,
// not a fall-through, so a typo is reported instead of silently ignored.
Result<std::string> locate_backend_binary(const BinaryQuery& query, const std::string& cache_dir);

}  // namespace lemon
