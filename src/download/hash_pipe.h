// HashPipe: feeds downloaded bytes to a Hasher on a thread of its own, so
// hashing overlaps with receiving and writing instead of adding to them
// (issue #7: the checksum is computed while the file downloads, with no
// second pass). Bytes are copied into reusable buffers; at most kMaxQueued
// bytes wait, so a slow hasher slows the download instead of growing memory.
//
// Thread-safety: push()/drain()/finish() from the transfer thread only.
#pragma once

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

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
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return queued_ < kMaxQueued; });
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
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return queued_ == 0; });
  }

  // Hashes what is left and stops the thread; the Hasher is then complete.
  void stop() {
    {
      std::lock_guard lock(mu_);
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
    std::unique_lock lock(mu_);
    while (true) {
      data_.wait(lock, [&] { return !queue_.empty() || stopping_; });
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
  std::mutex mu_;
  std::condition_variable data_;
  std::condition_variable space_;
  std::deque<std::vector<char>> queue_;
  std::vector<std::vector<char>> free_;
  std::size_t queued_ = 0;
  bool stopping_ = false;
  std::thread worker_;  // last: starts after the members it uses
};

}  // namespace lemon::download
