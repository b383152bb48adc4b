#include "support/process_signal.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

namespace lemon::testing {

bool is_signalable_pid(pid_t pid) {
  return pid > 1 && pid != ::getpid();
}

void signal_process(pid_t pid, int sig) {
  ASSERT_TRUE(is_signalable_pid(pid))
      << "refusing to send signal " << sig << " to pid " << pid
      << ": a test signals only a single process it started or read";
  ASSERT_EQ(::kill(pid, sig), 0) << "kill(" << pid << ", " << sig << "): " << std::strerror(errno);
}

bool try_signal_process(pid_t pid, int sig) noexcept {
  return is_signalable_pid(pid) && ::kill(pid, sig) == 0;
}

}  // namespace lemon::testing
