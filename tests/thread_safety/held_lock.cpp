// Compiled by the thread_safety.* tests (tests/CMakeLists.txt) with clang's
// -Wthread-safety -Werror: every use of guarded state here holds its mutex,
// so this must compile. Its twin, missing_lock.cpp, must not.
#include <chrono>

#include "lemon/core/mutex.h"

namespace {

class Counter {
 public:
  void add(int n) {
    lemon::MutexLock lock(mu_);
    add_locked(n);
    changed_.notify_all();
  }
  int wait_for_at_least(int n) {
    lemon::MutexLock lock(mu_);
    changed_.wait_for(lock, std::chrono::milliseconds(1),
                      [&]() LEMON_REQUIRES(mu_) { return value_ >= n; });
    return value_;
  }
  int read_shared() {
    lemon::ReaderLock lock(names_mu_);
    return names_;
  }
  void write_shared(int n) {
    lemon::SharedMutexLock lock(names_mu_);
    names_ = n;
  }
  int unlock_and_relock() {
    lemon::MutexLock lock(mu_);
    lock.unlock();
    lock.lock();
    return value_;
  }

 private:
  void add_locked(int n) LEMON_REQUIRES(mu_) { value_ += n; }

  lemon::Mutex mu_;
  lemon::CondVar changed_;
  int value_ LEMON_GUARDED_BY(mu_) = 0;
  lemon::SharedMutex names_mu_;
  int names_ LEMON_GUARDED_BY(names_mu_) = 0;
};

}  // namespace

int main() {
  Counter c;
  c.add(1);
  c.write_shared(2);
  return c.wait_for_at_least(1) + c.read_shared() + c.unlock_and_relock() == 4 ? 0 : 1;
}
