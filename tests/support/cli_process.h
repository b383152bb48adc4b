// CliProcess: the real lemonade-server binary (LEMON_CLI_BIN) as a child of
// the test, with exactly the given environment, on pipes (stdout and stderr
// apart, stdin writable) or on a pseudo-terminal (one stream, like a user's
// terminal). A reader thread collects the output, so a test waits for text
// (never sleeps); run_cli() runs one command to its end.
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

std::string cli_binary();
// Lemonade 11's command lines (LEMON_LEMONADE_BIN, LEMON_LEMOND_BIN).
std::string lemonade_binary();
std::string lemond_binary();

struct CliResult {
  int code = -1;  // exit code; 128 + signal if killed; -1 if it did not end in time
  std::string out;
  std::string err;
};

class CliProcess {
 public:
  // `binary`: another program than lemonade-server (lemonade, lemond).
  CliProcess(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
             bool terminal = false, const std::string& binary = "");
  ~CliProcess();  // SIGKILLs the CLI if it still runs (its router dies with it)
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits until stdout (the terminal's output) holds `needle` after byte
  // offset `from`; returns the offset just past it, or nullopt on timeout.
  std::optional<std::size_t> wait_for(std::string_view needle, std::size_t from = 0,
                                      std::chrono::milliseconds timeout = kWait) const;
  std::string out() const;
  std::string err() const;
  // Writes to stdin (or types on the terminal).
  void write(std::string_view text) const;
  void close_stdin();
  void signal(int sig) const;
  // The exit code once the CLI ended and its output reached EOF.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = kWait);

 private:
  void read_output();

  pid_t pid_ = -1;
  int in_fd_ = -1;   // stdin, or the pty master
  int out_fd_ = -1;  // stdout, or the pty master
  int err_fd_ = -1;  // -1 on a terminal
  bool terminal_ = false;
  std::optional<int> code_;
  std::thread reader_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::string out_;   // guarded by mu_
  std::string err_;   // guarded by mu_
  bool eof_ = false;  // guarded by mu_
};

// Runs `lemonade-server args...` (or `binary args...`) to the end with
// `input` on stdin.
CliResult run_cli(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env, const std::string& input = "",
                  const std::string& binary = "");

// Live lemonade-router processes whose environment has LEMONADE_CACHE_DIR ==
// `cache_dir` (what a test's CLI started and may have left behind).
std::vector<pid_t> routers_with_cache(const std::string& cache_dir);
// Waits (on their pidfds, up to `timeout`) until none of those is left;
// returns the ones still alive.
std::vector<pid_t> wait_routers_gone(const std::string& cache_dir,
                                     std::chrono::milliseconds timeout = kWait);

}  // namespace lemon::testing
