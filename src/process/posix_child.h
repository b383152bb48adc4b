// PosixChild: the ChildProcess of the POSIX launcher. Internal to src/process.
//
// The monitor thread is the only reader of the output pipes and the only
// reaper; it calls append_line() and mark_exited(). Everything else may be
// called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/process/child_process.h"
#include "lemon/process/process_launcher.h"

namespace lemon::process_detail {

class PosixChild final : public ChildProcess {
 public:
  PosixChild(pid_t pid, int pidfd, const SpawnSpec& spec);
  ~PosixChild() override;

  pid_t pid() const override { return pid_; }
  std::optional<ExitStatus> exit_status() const override;
  bool wait_exit_until(std::chrono::steady_clock::time_point deadline) override;
  bool wait_output_or_exit_until(std::chrono::steady_clock::time_point deadline) override;
  void terminate(std::chrono::milliseconds grace) override;
  std::vector<std::string> last_lines(std::size_t n) const override;
  void on_exit(std::function<void(const ExitStatus&)> callback) override;
  bool write_input(std::string_view text) override;

  // The write end of the child's input pipe (SpawnSpec::input_pipe); owned
  // from now on, closed once the child is reaped.
  void hold_input(int fd);

  // Monitor-thread side.
  int pidfd() const { return pidfd_; }
  // Filters, buffers and logs one output line.
  void append_line(std::string line);
  // Observes the exit without reaping (the leader stays a zombie so its
  // process-group id cannot be reused), kills what is left of the group,
  // reaps, records the status and wakes waiters. Runs the exit callback.
  void reap();

 private:
  void signal_group(int sig) LEMON_REQUIRES(mu_);

  const pid_t pid_;
  const int pidfd_;
  const std::string tag_;
  const std::string model_;
  const std::vector<std::string> drop_;
  const std::size_t kept_lines_;
  const std::function<bool(const std::string&)> line_hook_;

  mutable Mutex mu_;
  CondVar exited_cv_;
  std::optional<ExitStatus> status_ LEMON_GUARDED_BY(mu_);
  std::deque<std::string> lines_ LEMON_GUARDED_BY(mu_);
  std::uint64_t lines_written_ LEMON_GUARDED_BY(mu_) = 0;
  std::function<void(const ExitStatus&)> on_exit_ LEMON_GUARDED_BY(mu_);
  int input_fd_ LEMON_GUARDED_BY(mu_) = -1;
};

}  // namespace lemon::process_detail
