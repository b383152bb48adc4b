// Compiled by the thread_safety.* tests (tests/CMakeLists.txt) with clang's
// -Wthread-safety -Werror: each function below breaks a lock rule, so this
// must fail to compile, naming the guarded field. Its twin, held_lock.cpp,
// is the same code done right.
#include "lemon/core/mutex.h"

namespace {

class Counter {
 public:
  // Reads a guarded field with no lock.
  int value() const { return value_; }
  // Calls a function that requires the lock without it.
  void add(int n) { add_locked(n); }
  // Uses the field after giving the lock back.
  int after_unlock() {
    lemon::MutexLock lock(mu_);
    lock.unlock();
    return value_;
  }

 private:
  void add_locked(int n) LEMON_REQUIRES(mu_) { value_ += n; }

  mutable lemon::Mutex mu_;
  int value_ LEMON_GUARDED_BY(mu_) = 0;
};

}  // namespace

int main() {
  Counter c;
  c.add(1);
  return c.value() + c.after_unlock();
}
