// LoadWatch: the signs of life a backend gives while it loads, for the
// stall bound (--load-stall-timeout): a backend that reports its load
// (llama-server's state lines in router child mode, backend_report.h)
// restarts the load clock with each report and with each other line it
// writes; one silent for the stall bound fails. A backend that never
// reported has only the hard cap, --load-timeout.
//
// Thread-safety: a LoadWatch may be used from any thread (the process
// monitor's line hook marks it, the loader reads it). load_deadline() and
// load_stage_text() are pure.
#pragma once

#include <chrono>
#include <string>

#include "lemon/backends/backend_report.h"
#include "lemon/core/mutex.h"

namespace lemon {

using LoadClock = std::chrono::steady_clock;

// What a load has shown so far.
struct LoadSigns {
  bool reports = false;          // it has reported its load at least once
  LoadClock::time_point last{};  // its last report or output line
  std::string stage;             // the last stage it reported ("" before)
};

class LoadWatch {
 public:
  // A new process: nothing seen yet.
  void restart() LEMON_EXCLUDES(mu_);
  // It reported its load at `stage`: it reports from now on.
  void progress(std::string stage, LoadClock::time_point now) LEMON_EXCLUDES(mu_);
  // It wrote another line (a log line).
  void activity(LoadClock::time_point now) LEMON_EXCLUDES(mu_);
  LoadSigns signs() const LEMON_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  LoadSigns signs_ LEMON_GUARDED_BY(mu_);
};

// When a load fails if nothing more happens.
struct LoadDeadline {
  LoadClock::time_point at;
  bool stall = false;  // the stall bound, not the hard cap
};

// The hard cap (`started` + `load_timeout`) or, for a backend that reports,
// `stall_timeout` after its last sign, whichever comes first.
// `stall_timeout` zero: no stall bound.
LoadDeadline load_deadline(LoadClock::time_point started, const LoadSigns& signs,
                           std::chrono::milliseconds load_timeout,
                           std::chrono::milliseconds stall_timeout);

// A load's progress as a stage for messages: "text_model 42%",
// "mmproj_model" (a stage's start).
std::string load_stage_text(const LoadProgress& progress);

}  // namespace lemon
