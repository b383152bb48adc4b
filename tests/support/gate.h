// Gate: a one-shot signal between threads. wait() returns true once open()
// has been called (at any time, before or during the wait), or false when the
// timeout passes first; the timeout guards against hangs and is never a way
// to pace a test.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace lemon::testing {

class Gate {
 public:
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace lemon::testing
