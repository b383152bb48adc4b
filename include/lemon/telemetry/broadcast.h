// Broadcast<T>: one publisher side, many followers (the event stream, the log
// stream). Each item gets the next id (1, 2, ...); the last `history` items
// are kept, so a follower can start from an id it has seen (SSE
// Last-Event-ID) or with the most recent few.
//
// A follower has its own bounded queue. Publishing never waits for one: a
// follower whose queue is full is dropped (it sees dropped() and its caller
// ends the stream), so a slow consumer cannot slow the router.
//
// Items are shared (shared_ptr<const T>), never copied per follower.
// publish() and its locks must not log: the log stream publishes from inside
// the logger.
//
// Thread-safety: every method may be called from any thread. A Follower is
// used by one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include "lemon/core/mutex.h"

namespace lemon::telemetry {

template <typename T>
class Broadcast {
 public:
  struct Item {
    std::uint64_t id;
    std::shared_ptr<const T> value;
  };

  class Follower {
   public:
    // Waits up to `timeout` for items; returns what is queued (possibly
    // nothing on timeout, or once dropped or closed).
    std::vector<Item> next(std::chrono::milliseconds timeout) {
      MutexLock lock(mu_);
      cv_.wait_for(lock, timeout,
                   [&]() LEMON_REQUIRES(mu_) { return !queue_.empty() || dropped_ || closed_; });
      std::vector<Item> out(std::make_move_iterator(queue_.begin()),
                            std::make_move_iterator(queue_.end()));
      queue_.clear();
      return out;
    }
    // Fell behind by more than its queue holds; the stream should end.
    bool dropped() const {
      MutexLock lock(mu_);
      return dropped_;
    }
    // The broadcast was closed (shutdown) or the follower was cancelled.
    bool closed() const {
      MutexLock lock(mu_);
      return closed_;
    }
    void close() {
      MutexLock lock(mu_);
      closed_ = true;
      cv_.notify_all();
      if (notify_) {
        notify_();
      }
    }
    // Called when an item arrives at an empty queue, and when the follower
    // is dropped or closed: for a reader that waits on something else than
    // next() (a WebSocket's thread). It runs under the broadcast's locks, on
    // the publishing thread (also inside a logger): it must only signal,
    // never log or block. Items already queued when it is set do not call it.
    void set_notify(std::function<void()> notify) {
      MutexLock lock(mu_);
      notify_ = std::move(notify);
    }

   private:
    friend class Broadcast;
    explicit Follower(std::size_t limit) : limit_(limit) {}
    // False once dropped or closed.
    bool offer(const Item& item) {
      MutexLock lock(mu_);
      if (dropped_ || closed_) {
        return false;
      }
      if (queue_.size() >= limit_) {
        dropped_ = true;
        queue_.clear();
        cv_.notify_all();
        if (notify_) {
          notify_();
        }
        return false;
      }
      const bool was_empty = queue_.empty();
      queue_.push_back(item);
      cv_.notify_all();
      if (was_empty && notify_) {
        notify_();
      }
      return true;
    }

    const std::size_t limit_;
    mutable Mutex mu_;
    CondVar cv_;
    std::deque<Item> queue_ LEMON_GUARDED_BY(mu_);
    bool dropped_ LEMON_GUARDED_BY(mu_) = false;
    bool closed_ LEMON_GUARDED_BY(mu_) = false;
    std::function<void()> notify_ LEMON_GUARDED_BY(mu_);
  };

  Broadcast(std::size_t history, std::size_t follower_queue)
      : history_limit_(history), follower_queue_(follower_queue) {}

  // Stamps and delivers `value`; returns its id.
  std::uint64_t publish(T value) {
    auto shared = std::make_shared<const T>(std::move(value));
    MutexLock lock(mu_);
    Item item{++last_id_, std::move(shared)};
    history_.push_back(item);
    while (history_.size() > history_limit_) {
      history_.pop_front();
    }
    std::erase_if(followers_, [&](const std::weak_ptr<Follower>& weak) {
      auto f = weak.lock();
      return !f || !f->offer(item);
    });
    attached_.store(followers_.size(), std::memory_order_relaxed);
    return item.id;
  }

  // A follower that first receives the kept items with an id above `after`,
  // or, without it, the last `backlog` kept items. Both then get every new
  // item. Ids that fell out of the history are skipped silently.
  std::shared_ptr<Follower> follow(std::optional<std::uint64_t> after, std::size_t backlog = 0) {
    std::shared_ptr<Follower> f(new Follower(follower_queue_));
    MutexLock lock(mu_);
    std::size_t start = history_.size();
    if (after) {
      start = 0;
      while (start < history_.size() && history_[start].id <= *after) {
        ++start;
      }
    } else {
      start = history_.size() - std::min(backlog, history_.size());
    }
    for (std::size_t i = start; i < history_.size(); ++i) {
      f->offer(history_[i]);
    }
    if (closed_) {
      f->close();
    } else {
      followers_.push_back(f);
      attached_.store(followers_.size(), std::memory_order_relaxed);
    }
    return f;
  }

  // Followers still attached (dropped or finished ones are pruned lazily).
  int followers() const {
    MutexLock lock(mu_);
    int n = 0;
    for (const auto& weak : followers_) {
      if (auto f = weak.lock(); f && !f->dropped() && !f->closed()) {
        ++n;
      }
    }
    return n;
  }

  // False only when no follower is attached, without taking a lock: what a
  // request asks first, so a router that nobody follows pays one atomic
  // load per request. True may count followers that ended
  // since the last publish; followers() is exact.
  bool maybe_followed() const { return attached_.load(std::memory_order_relaxed) > 0; }

  std::uint64_t last_id() const {
    MutexLock lock(mu_);
    return last_id_;
  }

  // The kept items with an id above `after`.
  std::vector<Item> since(std::uint64_t after) const {
    MutexLock lock(mu_);
    std::vector<Item> out;
    for (const auto& item : history_) {
      if (item.id > after) {
        out.push_back(item);
      }
    }
    return out;
  }

  // Closes every follower, now and later (shutdown: streams end).
  void close() {
    std::vector<std::shared_ptr<Follower>> all;
    {
      MutexLock lock(mu_);
      closed_ = true;
      for (const auto& weak : followers_) {
        if (auto f = weak.lock()) {
          all.push_back(std::move(f));
        }
      }
      followers_.clear();
      attached_.store(0, std::memory_order_relaxed);
    }
    for (const auto& f : all) {
      f->close();
    }
  }

 private:
  const std::size_t history_limit_;
  const std::size_t follower_queue_;
  mutable Mutex mu_;
  std::uint64_t last_id_ LEMON_GUARDED_BY(mu_) = 0;
  std::deque<Item> history_ LEMON_GUARDED_BY(mu_);
  std::vector<std::weak_ptr<Follower>> followers_ LEMON_GUARDED_BY(mu_);
  std::atomic<std::size_t> attached_{0};  // followers_.size(), stored under mu_
  bool closed_ LEMON_GUARDED_BY(mu_) = false;
};

}  // namespace lemon::telemetry
