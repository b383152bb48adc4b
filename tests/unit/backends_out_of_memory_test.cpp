// Out-of-memory recognition where a backend's output is read (issue #14 §2),
// against lines recorded from llama.cpp's CUDA, Vulkan and CPU back ends and
// from whisper-server.
#include "lemon/backends/out_of_memory.h"

#include <csignal>

#include <gtest/gtest.h>

namespace lemon {
namespace {

TEST(OutOfMemoryOutput, LlamaCppAllocationFailuresAreRecognised) {
  const std::vector<std::vector<std::string>> recorded = {
      {"ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9536.00 MiB on device 0: "
       "cudaMalloc failed: out of memory",
       "alloc_tensor_range: failed to allocate CUDA0 buffer of size 9999220736",
       "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
       "main: exiting due to model loading failure"},
      {"llama_kv_cache_init: failed to allocate buffer for kv cache"},
      {"ggml_vulkan: Device memory allocation of size 4294967296 failed.",
       "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory"},
      {"ggml_aligned_malloc: insufficient memory (attempted to allocate 24576.00 MB)"},
      {"terminate called after throwing an instance of 'std::bad_alloc'"},
  };
  for (const auto& lines : recorded) {
    EXPECT_TRUE(ggml_output_reports_out_of_memory(lines)) << lines.front();
  }
}

// Recorded from whisper-server (whisper.cpp v1.8.2, CPU) loading a model of
// whisper base's shape under `ulimit -v` (issue #31): the allocation fails
// in ggml (then it dies of SIGSEGV), or in the C++ runtime (SIGABRT).
TEST(OutOfMemoryOutput, WhisperCppAllocationFailuresAreRecognised) {
  const std::vector<std::vector<std::string>> recorded = {
      {"whisper_init_state: kv self size  =    6.29 MB",
       "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 18874368",
       "alloc_tensor_range: failed to allocate CPU buffer of size 18874368",
       "whisper_kv_cache_init: failed to allocate memory for the kv cache"},
      {"whisper_init_state: kv pad  size  =    3.15 MB",
       "terminate called after throwing an instance of 'std::bad_alloc'",
       "  what():  std::bad_alloc"},
  };
  for (const auto& lines : recorded) {
    EXPECT_TRUE(ggml_output_reports_out_of_memory(lines)) << lines.back();
  }
}

TEST(OutOfMemoryOutput, OtherFailuresAreNot) {
  EXPECT_FALSE(ggml_output_reports_out_of_memory(
      {"llama_model_load: error loading model: failed to open /m/x.gguf",
       "main: exiting due to model loading failure"}));
  EXPECT_FALSE(ggml_output_reports_out_of_memory(
      {"couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8001"}));
  EXPECT_FALSE(ggml_output_reports_out_of_memory({}));
}

TEST(OutOfMemoryOutput, OnlyAKillBySigkillLooksLikeTheOomKiller) {
  EXPECT_TRUE(killed_like_out_of_memory({true, SIGKILL}));
  EXPECT_FALSE(killed_like_out_of_memory({true, SIGSEGV}));
  EXPECT_FALSE(killed_like_out_of_memory({false, 9}));  // exit code 9
}

}  // namespace
}  // namespace lemon
