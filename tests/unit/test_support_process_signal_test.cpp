// The tests' one way to signal a process refuses every pid that names more
// than one process, init or the test itself, and sends nothing then.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "support/process_signal.h"

namespace lemon::testing {
namespace {

// Every pid that must never reach kill(2) from a test.
pid_t refused(int i) {
  switch (i) {
    case 0:
      return 0;  // the caller's process group
    case 1:
      return -1;  // every process the caller may signal
    case 2:
      return -::getpgrp();  // a whole group
    case 3:
      return 1;  // init
    default:
      return ::getpid();  // the test itself
  }
}

TEST(ProcessSignal, RefusesZeroMinusOneGroupsInitAndItself) {
  // SIGTERM would end this test binary if any of them were sent.
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(is_signalable_pid(refused(i))) << refused(i);
  }
  EXPECT_FATAL_FAILURE(signal_process(0, SIGTERM), "refusing to send signal");
  EXPECT_FATAL_FAILURE(signal_process(-1, SIGTERM), "refusing to send signal");
  EXPECT_FATAL_FAILURE(signal_process(-2, SIGTERM), "refusing to send signal");
  EXPECT_FATAL_FAILURE(signal_process(1, SIGTERM), "refusing to send signal");
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(try_signal_process(refused(i), SIGTERM)) << refused(i);
  }
}

TEST(ProcessSignal, SignalsAChildItStarted) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  EXPECT_TRUE(is_signalable_pid(child));
  signal_process(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

}  // namespace
}  // namespace lemon::testing
