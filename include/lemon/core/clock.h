// Wall-clock time as the API and the events show it: milliseconds since the
// Unix epoch. Durations are measured with steady_clock instead.
//
// Thread-safety: any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace lemon {

inline std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace lemon
