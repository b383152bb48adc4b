// Recognising a backend that ran out of memory while it loaded,
// at the one place its output is read. ggml-based servers (llama.cpp,
// whisper.cpp, stable-diffusion.cpp) print an allocation failure before they
// give up: "cudaMalloc failed: out of memory", "failed to allocate CUDA0
// buffer of size ...", "unable to allocate CUDA0 buffer", Vulkan's
// "ErrorOutOfDeviceMemory", ggml's "insufficient memory", "std::bad_alloc".
// The result becomes ErrorCode::kOutOfMemory; nothing above this layer looks
// at the text again.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "lemon/process/child_process.h"

namespace lemon {

// True when one of `lines` (a backend's last output) is a ggml allocation
// failure.
bool ggml_output_reports_out_of_memory(const std::vector<std::string>& lines);

// True when a child that we did not stop was killed by SIGKILL: on Linux that
// is the kernel's OOM killer.
bool killed_like_out_of_memory(const ExitStatus& status);

}  // namespace lemon
