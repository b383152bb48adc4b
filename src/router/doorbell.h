// Doorbell: how a thread that waits for changes in state it does not own
// (the loader waits on the server table and its queue, the housekeeper on
// its timer and the table) is woken. ring() counts; wait() returns once the
// count has moved past the value the waiter read with rung() before it
// looked at that state, or at a deadline. A ring between the look and the
// wait is therefore never lost.
//
// Thread-safety: every method from any thread. Its lock is a leaf: ring()
// may be called with any other lock held, and takes none.
#pragma once

#include <chrono>
#include <cstdint>

#include "lemon/core/mutex.h"

namespace lemon {

class Doorbell {
 public:
  using Clock = std::chrono::steady_clock;

  std::uint64_t rung() const LEMON_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return rings_;
  }
  void ring() LEMON_EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      ++rings_;
    }
    cv_.notify_all();
  }
  // Until it is rung after `seen`, or until `until` (max: no deadline).
  void wait(std::uint64_t seen, Clock::time_point until) LEMON_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    auto moved = [&]() LEMON_REQUIRES(mu_) { return rings_ != seen; };
    if (until == Clock::time_point::max()) {
      cv_.wait(lock, moved);
    } else {
      cv_.wait_until(lock, until, moved);
    }
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;
  std::uint64_t rings_ LEMON_GUARDED_BY(mu_) = 0;
};

}  // namespace lemon
