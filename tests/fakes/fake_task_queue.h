// GrowingTaskQueue: an httplib task queue that starts threads on demand (up
// to a cap) and reuses idle ones, so a fake starts and stops in a
// millisecond instead of creating and joining hundreds of threads up front,
// yet still serves hundreds of concurrent streams.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace fake {

class GrowingTaskQueue final : public httplib::TaskQueue {
 public:
  explicit GrowingTaskQueue(std::size_t max_threads) : max_threads_(max_threads) {}
  ~GrowingTaskQueue() override { shutdown(); }

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void worker();

  const std::size_t max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace fake
