// Resident memory of a backend: its process group's RSS, read from /proc
// (a loaded model's estimate is replaced by what it holds).
//
// Thread-safety: pure apart from reading /proc.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace lemon {

// The resident bytes of process `leader` and every process in its group
// (a backend's helpers), 0 when it is gone.
std::int64_t group_resident_bytes(pid_t leader);

}  // namespace lemon
