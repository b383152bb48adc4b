#include "lemon/backends/load_watch.h"

#include <algorithm>
#include <cmath>

namespace lemon {

void LoadWatch::restart() {
  MutexLock lock(mu_);
  signs_ = LoadSigns{};
}

void LoadWatch::progress(std::string stage, LoadClock::time_point now) {
  MutexLock lock(mu_);
  signs_.reports = true;
  signs_.last = std::max(signs_.last, now);
  signs_.stage = std::move(stage);
}

void LoadWatch::activity(LoadClock::time_point now) {
  MutexLock lock(mu_);
  signs_.last = std::max(signs_.last, now);
}

LoadSigns LoadWatch::signs() const {
  MutexLock lock(mu_);
  return signs_;
}

LoadDeadline load_deadline(LoadClock::time_point started, const LoadSigns& signs,
                           std::chrono::milliseconds load_timeout,
                           std::chrono::milliseconds stall_timeout) {
  const LoadDeadline cap{started + load_timeout, false};
  if (!signs.reports || stall_timeout.count() <= 0) {
    return cap;
  }
  const auto stall = std::max(started, signs.last) + stall_timeout;
  return stall < cap.at ? LoadDeadline{stall, true} : cap;
}

std::string load_stage_text(const LoadProgress& progress) {
  std::string text = progress.current.empty() ? std::string("loading") : progress.current;
  if (progress.value) {
    text += " " + std::to_string(static_cast<int>(std::floor(*progress.value * 100))) + "%";
  }
  return text;
}

}  // namespace lemon
