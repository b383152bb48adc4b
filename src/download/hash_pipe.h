// HashPipe: feeds downloaded bytes to a Hasher on a thread of its own, so
// hashing overlaps with receiving and writing instead of adding to them
// (the checksum is computed while the file downloads, with no
// second pass). Bytes are copied into reusable buffers; at most kMaxQueued
// bytes wait, so a slow hasher slows the download instead of growing memory.
//
// Thread-safety: push()/drain()/finish() from the transfer thread only.
#pragma once

#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/download/checksum.h"

namespace lemon::download {

class HashPipe {
 public:
  static constexpr std::size_t kMaxQueued = 4u << 20;

  explicit HashPipe(Hasher& hasher) : hasher_(hasher), worker_([this] { run(); }) {}
  ~HashPipe() { stop(); }
  HashPipe(const HashPipe&) = delete;
  HashPipe& operator=(const HashPipe&) = delete;

  void push(const char* data, std::size_t size) {
    MutexLock lock(mu_);
    space_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return queued_ < kMaxQueued; });
    std::vector<char> buf;
    if (!free_.empty()) {
      buf = std::move(free_.back());
      free_.pop_back();
    }
    buf.assign(data, data + size);
    queued_ += size;
    queue_.push_back(std::move(buf));
    data_.notify_one();
  }

  // Waits until every pushed byte has been hashed.
  void drain() {
    MutexLock lock(mu_);
    space_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return queued_ == 0; });
  }

  // Hashes what is left and stops the thread; the Hasher is then complete.
  void stop() {
    {
      MutexLock lock(mu_);
      if (stopping_) {
        return;
      }
      stopping_ = true;
    }
    data_.notify_one();
    worker_.join();
  }

 private:
  void run() {
    MutexLock lock(mu_);
    while (true) {
      data_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return !queue_.empty() || stopping_; });
      if (queue_.empty()) {
        return;  // stopping, and nothing left
      }
      std::vector<char> buf = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      hasher_.update(buf.data(), buf.size());
      lock.lock();
      queued_ -= buf.size();
      if (free_.size() < 8) {
        free_.push_back(std::move(buf));
      }
      space_.notify_one();
    }
  }

  Hasher& hasher_;
  Mutex mu_;
  CondVar data_;
  CondVar space_;
  std::deque<std::vector<char>> queue_ LEMON_GUARDED_BY(mu_);
  std::vector<std::vector<char>> free_ LEMON_GUARDED_BY(mu_);
  std::size_t queued_ LEMON_GUARDED_BY(mu_) = 0;
  bool stopping_ LEMON_GUARDED_BY(mu_) = false;
  std::thread worker_;  // last: starts after the members it uses
};

}  // namespace lemon::download
