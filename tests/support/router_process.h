// RouterProcess: the real lemonade-router binary running as a child of the
// test, with its stdout and stderr read line by line by a reader thread, so a
// test can wait for a log line (never sleep) and learn the port it listens on.
// Destroying it SIGKILLs the router and checks that every backend it started
// exits too (their pids are taken from /proc before the kill).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "support/test_env.h"

namespace lemon::testing {

// LEMON_ROUTER_BIN, the binary under test.
std::string router_binary();

// Whether this process may give a child a mount namespace with a folder
// mounted read-only (root, or CAP_SYS_ADMIN); "" if so, else why not.
std::string can_mount_read_only();

struct ExitInfo {
  bool exited = false;  // exited normally with `code`
  int code = -1;
  bool signaled = false;  // killed by `signal`
  int signal = 0;
};

class RouterProcess {
 public:
  // Starts `router_binary() args...` with exactly `env` as its environment.
  // Each folder in `read_only` is mounted read-only for the router alone (a
  // mount namespace of its own; see can_mount_read_only()), as a Kubernetes
  // ConfigMap is: changes made to it from outside still show inside.
  // `binary`: another program that becomes the router (lemond).
  RouterProcess(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                const std::vector<std::string>& read_only = {}, const std::string& binary = "");
  ~RouterProcess();
  RouterProcess(const RouterProcess&) = delete;
  RouterProcess& operator=(const RouterProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Waits for the "listening on http://HOST:PORT" log line and returns PORT,
  // or 0 if the router exited first or the deadline passed.
  int wait_listening(std::chrono::milliseconds timeout = kWait);
  int port() const { return port_; }

  // Waits until `occurrences` stderr lines contain `needle`.
  bool wait_for_log(std::string_view needle, int occurrences = 1,
                    std::chrono::milliseconds timeout = kWait) const;
  // These read everything the router wrote before the call (see catch_up).
  int count_log(std::string_view needle) const;
  std::vector<std::string> log_lines() const;  // stderr
  std::string log_text() const;                // stderr, one line per line
  std::string stdout_text() const;

  // Sends `sig` to the router.
  void signal(int sig) const;
  // Waits for the router to exit and for its stdout/stderr to reach EOF.
  std::optional<ExitInfo> wait_exit(std::chrono::milliseconds timeout = kWait);

  // The router's live descendants (backends and their children).
  std::vector<pid_t> backend_pids() const;

  // SIGKILLs the router unless it has exited, then waits (10 s) for every
  // backend seen before the kill to exit. Returns those that did not (they
  // are SIGKILLed then). Idempotent.
  std::vector<pid_t> kill_and_reap();

 private:
  void read_output();
  void append(std::string& partial, std::vector<std::string>& lines, const char* data,
              std::size_t n);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int stop_fd_ = -1;  // eventfd: tells the reader thread to give up
  int port_ = 0;
  std::optional<ExitInfo> exit_;
  std::thread reader_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::string> err_lines_;  // guarded by mu_
  std::vector<std::string> out_lines_;  // guarded by mu_
  std::string err_partial_;             // reader thread only
  std::string out_partial_;             // reader thread only
  bool eof_ = false;                    // guarded by mu_
  bool reading_ = false;  // guarded by mu_: the reader holds bytes not yet in the lines

  // Waits (mu_ held through `lock`) until every byte the router has written
  // so far is in the lines, so a count taken after an HTTP reply sees what
  // the router logged before replying. Gives up after a few seconds.
  void catch_up(std::unique_lock<std::mutex>& lock) const;
};

}  // namespace lemon::testing
