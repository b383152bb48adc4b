// Waiting for processes that are not our children (backends started by the
// router) without sleeping: a pidfd becomes readable when its process exits,
// whoever its parent is.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace lemon::testing {

class PidWatch {
 public:
  // Opens a pidfd at once; a pid that is already gone counts as exited.
  explicit PidWatch(pid_t pid);
  ~PidWatch();
  PidWatch(const PidWatch&) = delete;
  PidWatch& operator=(const PidWatch&) = delete;
  PidWatch(PidWatch&& other) noexcept;

  pid_t pid() const { return pid_; }
  // True once the process has exited; false if it is still running at the deadline.
  bool wait_exit(std::chrono::milliseconds timeout);
  bool exited() { return wait_exit(std::chrono::milliseconds(0)); }

 private:
  pid_t pid_;
  int fd_ = -1;
  bool gone_ = false;
};

// True if `pid` exits within `timeout` (or is already gone).
bool wait_pid_exit(pid_t pid, std::chrono::milliseconds timeout);

// Every live descendant of `pid` (children, grandchildren, ...), read from
// /proc/<pid>/task/*/children.
std::vector<pid_t> descendants_of(pid_t pid);

// Variable `name` of the environment `pid` was started with
// (/proc/<pid>/environ, readable by the same user only), or "" when it has
// none. A backend's secret is found this way (issue #24).
std::string environment_value(pid_t pid, const std::string& name);
// The command line of `pid`, its arguments joined by spaces
// (/proc/<pid>/cmdline, readable by every user).
std::string command_line(pid_t pid);

}  // namespace lemon::testing
