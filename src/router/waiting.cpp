#include "waiting.h"

namespace lemon {

bool wait_step(Mutex& mu, CondVar& cv, MutexLock& lock, const WaitHooks& hooks,
               std::chrono::steady_clock::time_point& next_tick) {
  if (!hooks.cancelled && !hooks.on_tick) {
    cv.wait(lock);
    return false;
  }
  cv.wait_until(lock, next_tick);
  if (std::chrono::steady_clock::now() < next_tick) {
    return false;
  }
  next_tick += hooks.tick_interval;
  // The hooks run without the lock. `lock` still owns `mu` as far as its
  // waits know, and `mu` is held again before it is used.
  mu.unlock();
  const bool gone = hooks.cancelled && hooks.cancelled();
  if (!gone && hooks.on_tick) {
    hooks.on_tick();
  }
  mu.lock();
  return gone;
}

}  // namespace lemon
