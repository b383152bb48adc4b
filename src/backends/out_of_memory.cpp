#include "lemon/backends/out_of_memory.h"

#include <csignal>
#include <string_view>

namespace lemon {
namespace {

// What ggml and its GPU back ends print when an allocation fails (llama.cpp:
// ggml-alloc.c, ggml-backend.cpp, ggml-cuda, ggml-vulkan, llama-model.cpp,
// llama-kv-cache.cpp, llama-context.cpp).
constexpr std::string_view kMarkers[] = {
    "out of memory",           // cudaMalloc / hipMalloc failed: out of memory
    "failed to allocate",      // ... CUDA0 buffer of size N, buffer for kv cache, compute buffers
    "unable to allocate",      // llama_model_load: error loading model: unable to allocate ...
    "ErrorOutOfDeviceMemory",  // Vulkan
    "ErrorOutOfHostMemory",    // Vulkan
    "insufficient memory",     // ggml_aligned_malloc
    "std::bad_alloc",
};

}  // namespace

bool ggml_output_reports_out_of_memory(const std::vector<std::string>& lines) {
  for (const auto& line : lines) {
    for (auto marker : kMarkers) {
      if (line.find(marker) != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

bool killed_like_out_of_memory(const ExitStatus& status) {
  return status.signaled && status.code == SIGKILL;
}

}  // namespace lemon
