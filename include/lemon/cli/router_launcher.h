// LaunchedRouter: a lemonade-router started by lemonade-server, from an argv
// (never a shell), with `--ready-fd` so the CLI learns that it listens, and on
// which port, without polling.
//
// The router is the leader of its own process group, gets SIGTERM if the CLI
// dies (PR_SET_PDEATHSIG: it drains and stops its backends), and may inherit
// one extra descriptor (the serve lock). Its stdout and stderr go through a
// pipe that a pump thread copies to the CLI's stdout and/or a log file, and
// keeps the last lines of, for error messages.
//
// Thread-safety: methods may be called from any thread; wait_ready() and
// wait_exit() from one thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"

namespace lemon::cli {

// lemonade-router beside this executable, else on PATH. Empty if neither.
std::string find_router_binary();

struct LaunchSpec {
  std::string binary;
  std::vector<std::string> args;  // argv[1..]; --ready-fd is added
  bool echo = false;              // copy the router's output to our stdout
  std::string log_file;           // and/or into this file (truncated); "" = none
  int inherit_fd = -1;            // kept open in the router (the serve lock)
};

class LaunchedRouter {
 public:
  static Result<std::unique_ptr<LaunchedRouter>> start(const LaunchSpec& spec);
  ~LaunchedRouter();
  LaunchedRouter(const LaunchedRouter&) = delete;
  LaunchedRouter& operator=(const LaunchedRouter&) = delete;

  pid_t pid() const { return pid_; }
  // The port once the router listens; an error (with its last output lines)
  // if it exited first.
  Result<int> wait_ready();
  // A descriptor that becomes readable when the router exits (a pidfd).
  int exit_fd() const { return pidfd_; }
  // Reaps the router; its exit code (128 + signal when killed).
  int wait_exit();
  // SIGTERM, up to `grace` for it to exit, then SIGKILL; returns the exit code.
  int stop(std::chrono::milliseconds grace);
  std::vector<std::string> last_lines() const;

 private:
  LaunchedRouter() = default;
  void pump(int fd, bool echo, int log_fd);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int ready_fd_ = -1;
  std::optional<int> exit_code_;
  std::thread pump_;
  mutable Mutex mu_;
  std::deque<std::string> lines_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon::cli
