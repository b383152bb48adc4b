// ChildProcess: one running backend program, spawned by a ProcessLauncher.
//
// The child is the leader of its own process group, gets SIGKILL if the
// router dies (PR_SET_PDEATHSIG, armed from a launcher thread that lives as
// long as the router), and has its stdout/stderr read line by line into a
// bounded buffer (and the log at debug level). Its exit is noticed at once by
// the launcher's monitor thread (pidfd), which records the status and wakes
// every waiter; the exit callback runs on that thread.
//
// Ownership: shared_ptr, held by the WrappedServer that spawned it (which must
// call terminate()) and by the launcher until the child is reaped. Destroying
// the launcher kills every child still running.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lemon {

struct ExitStatus {
  bool signaled = false;         // killed by a signal
  int code = 0;                  // exit code, or the signal number when signaled
  std::string describe() const;  // "exit code 1" / "killed by signal 9 (SIGKILL)"
};

class ChildProcess {
 public:
  virtual ~ChildProcess() = default;

  virtual pid_t pid() const = 0;
  // nullopt while running.
  virtual std::optional<ExitStatus> exit_status() const = 0;
  bool running() const { return !exit_status().has_value(); }

  // Blocks until the child has exited or `deadline` passes. Returns whether it
  // exited. Wakes at once on exit (no polling).
  virtual bool wait_exit_until(std::chrono::steady_clock::time_point deadline) = 0;
  // The same, but also returns (false) as soon as the child writes a line
  // of output: a backend says it is ready in its output, so a readiness
  // probe can follow each line instead of waiting for its next turn.
  virtual bool wait_output_or_exit_until(std::chrono::steady_clock::time_point deadline) {
    return wait_exit_until(deadline);
  }

  // SIGTERM to the group, wait up to `grace` for the leader to exit, then
  // SIGKILL the group and wait until it is reaped. Idempotent; concurrent
  // callers all return once the child is gone. Never sleeps a fixed time.
  virtual void terminate(std::chrono::milliseconds grace) = 0;

  // The last `n` lines the child wrote (stdout and stderr interleaved in
  // arrival order), oldest first.
  virtual std::vector<std::string> last_lines(std::size_t n) const = 0;

  // Writes `text` to the child's standard input when it was spawned with
  // SpawnSpec::input_pipe; false when it was not, has exited, or the pipe
  // is full (the write never blocks).
  virtual bool write_input(std::string_view text) {
    (void)text;
    return false;
  }

  // Called once, on the monitor thread, when the child exits for any reason.
  // Set before the child can exit unnoticed: if it already exited, the
  // callback runs immediately on the calling thread.
  virtual void on_exit(std::function<void(const ExitStatus&)> callback) = 0;
};

}  // namespace lemon
