// LoadCooldown: which models must not be loaded again yet because their
// loads keep failing. After two failed loads in a row a model
// rests for 5 s, and each further failure doubles the rest, up to 5 min.
// Meanwhile requests get the last load error at once, with Retry-After, so a
// broken model cannot thrash every other model out of memory through
// evict-all-then-retry. It also remembers a load that failed even after every
// other model was evicted: later loads of that model then evict nothing
// (on_load_failure). A successful load or an explicit /load resets both.
//
// Pure bookkeeping: time is passed in, nothing sleeps or locks.
// Thread-safety: none; Router guards it with its mutex.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "lemon/core/error.h"

namespace lemon {

// The rest after `consecutive_failures` failed loads in a row: none for
// fewer than 2, then 5 s, 10 s, 20 s, ... capped at 5 min.
std::chrono::seconds cooldown_after(int consecutive_failures);

class LoadCooldown {
 public:
  using Clock = std::chrono::steady_clock;

  // Records a failed load; `after_evict_all`: it failed even after every
  // other model was evicted for it. Returns the rest it starts (0 s for none).
  std::chrono::seconds record_failure(std::string_view model, const Error& error,
                                      Clock::time_point now, bool after_evict_all);
  // A successful load, or an explicit /load: forget the model's failures.
  void reset(std::string_view model);

  // The last load error, with Retry-After set to the seconds left (rounded
  // up), while the model rests; nullopt when it may be loaded.
  std::optional<Error> refusal(std::string_view model, Clock::time_point now) const;

  int consecutive_failures(std::string_view model) const;
  // Some failure since the last reset came after an evict-all.
  bool failed_after_evict_all(std::string_view model) const;

 private:
  struct Record {
    int failures = 0;
    Clock::time_point until{};
    std::optional<Error> last;
    bool after_evict_all = false;
  };
  std::map<std::string, Record, std::less<>> records_;
};

}  // namespace lemon
