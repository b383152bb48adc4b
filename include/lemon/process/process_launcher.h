// ProcessLauncher: spawns backend programs from an argv, never through a
// shell (docs/architecture.md, "process").
//
// The POSIX launcher forks from a dedicated spawner thread (so that
// PR_SET_PDEATHSIG, which fires when the *thread* that forked exits, only
// fires when the router itself dies), puts each child in a new process group,
// closes every inherited descriptor, and reports exec failures as typed errors
// through a close-on-exec pipe: ENOENT/EACCES/ENOEXEC -> kBackendBinaryMissing,
// anything else -> kSpawnFailed. One monitor thread watches every child's
// output pipes and pidfd.
//
// Thread-safety: spawn() may be called from any thread, concurrently.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/process/child_process.h"

namespace lemon {

struct SpawnSpec {
  std::string executable;         // absolute path
  std::vector<std::string> args;  // argv[1..]
  // Variables to set (or override) on top of the router's environment.
  std::vector<std::pair<std::string, std::string>> env;
  std::string log_tag;  // prefix for the child's lines in the router log
  // The model the child serves: its lines go to the log stream tagged with
  // it (tap_child_output). Empty for helper programs (flm list).
  std::string model;
  // Output lines containing any of these are neither buffered nor logged
  // (health-poll access-log lines).
  std::vector<std::string> drop_lines_containing;
  std::size_t kept_lines = 200;  // bound of the per-child line buffer
  // Standard input: /dev/null, or a pipe the launcher holds open for the
  // child's life (ChildProcess::write_input). The pipe's end is closed when
  // the child is reaped, and by the kernel when the router dies, so a child
  // that watches its input sees end of file then.
  bool input_pipe = false;
  // Called on the launcher's monitor thread with each output line, before
  // the drop filter; true means the line is the hook's (a protocol line):
  // it is neither buffered nor logged above debug level. Must be quick and
  // take no lock a spawn() caller holds.
  std::function<bool(const std::string& line)> line_hook;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  virtual Result<std::shared_ptr<ChildProcess>> spawn(const SpawnSpec& spec) = 0;
};

// The real launcher. Owns the spawner and monitor threads; destroying it kills
// every child still running.
std::unique_ptr<ProcessLauncher> make_posix_process_launcher();

}  // namespace lemon
