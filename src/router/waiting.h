// One step of a caller's wait inside the router (a free slot, a load, a
// session's server): the condition variable releases the caller's lock, and
// the caller's WaitHooks run with it released too.
#pragma once

#include <chrono>

#include "lemon/core/mutex.h"
#include "lemon/router/router.h"

namespace lemon {

// Waits on `cv` until notified or, when the hooks poll the caller, until
// `next_tick`, when they run without `mu` (then next_tick moves on by the
// hooks' interval). `lock` holds `mu`, and holds it again on return. True
// when the caller is gone (hooks.cancelled()).
bool wait_step(Mutex& mu, CondVar& cv, MutexLock& lock, const WaitHooks& hooks,
               std::chrono::steady_clock::time_point& next_tick) LEMON_REQUIRES(mu);

}  // namespace lemon
