// The one way tests signal a process. Only a pid that names a single process
// the test started or read may be signalled: never 0 (the caller's group), -1
// (every process the caller may signal), a negative pid (a whole group), 1
// (init) or the test process itself. Anything else is refused before kill(2)
// runs.
#pragma once

#include <sys/types.h>

namespace lemon::testing {

// True if `pid` names one process other than init and this one.
bool is_signalable_pid(pid_t pid);

// Sends `sig` to `pid`. Fails the test fatally, without signalling anything,
// when `pid` is not signalable, and fatally when kill(2) fails. Call it as
// ASSERT_NO_FATAL_FAILURE(signal_process(pid, SIGKILL)) where the test relies
// on the signal.
void signal_process(pid_t pid, int sig);

// For clean-up paths (destructors, teardown): sends `sig` to `pid` if it is
// signalable and returns whether kill(2) succeeded; refuses silently
// otherwise.
bool try_signal_process(pid_t pid, int sig) noexcept;

}  // namespace lemon::testing
