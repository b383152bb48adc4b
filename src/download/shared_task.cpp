#include "lemon/download/shared_task.h"
#include "lemon/core/mutex.h"

#include <algorithm>
#include <atomic>
#include <exception>

namespace lemon::download {

struct SharedTasks::Task final : TaskContext {
  mutable Mutex mu;
  mutable CondVar cv;
  TaskProgress progress LEMON_GUARDED_BY(mu);
  std::uint64_t version LEMON_GUARDED_BY(mu) = 0;
  std::optional<Status> result LEMON_GUARDED_BY(mu);
  int followers LEMON_GUARDED_BY(mu) = 0;
  bool pinned LEMON_GUARDED_BY(mu) = false;
  std::atomic<bool> cancel{false};
  std::atomic<bool> thread_done{false};

  void publish(const TaskProgress& p) override {
    {
      MutexLock lock(mu);
      progress = p;
      ++version;
    }
    cv.notify_all();
  }
  bool cancelled() const override { return cancel.load(); }

  void leave() {
    MutexLock lock(mu);
    if (--followers == 0 && !pinned && !result) {
      cancel = true;
    }
  }
};

SharedTasks::Follower::~Follower() {
  if (task_) {
    task_->leave();
  }
}

SharedTasks::Follower::Follower(Follower&& other) noexcept
    : task_(std::move(other.task_)), started_(other.started_) {
  other.task_.reset();
}

SharedTasks::Follower& SharedTasks::Follower::operator=(Follower&& other) noexcept {
  if (this != &other) {
    if (task_) {
      task_->leave();
    }
    task_ = std::move(other.task_);
    other.task_.reset();
    started_ = other.started_;
  }
  return *this;
}

std::pair<TaskProgress, std::uint64_t> SharedTasks::Follower::wait_progress(
    std::uint64_t seen_version, std::chrono::milliseconds timeout) const {
  if (!task_) {
    return {TaskProgress{}, 0};
  }
  MutexLock lock(task_->mu);
  task_->cv.wait_for(lock, timeout, [&]() LEMON_REQUIRES(task_->mu) {
    return task_->version > seen_version || task_->result.has_value();
  });
  return {task_->progress, task_->version};
}

std::optional<Status> SharedTasks::Follower::result() const {
  if (!task_) {
    return Status(Error(ErrorCode::kCancelled, "not following a task"));
  }
  MutexLock lock(task_->mu);
  return task_->result;
}

void SharedTasks::Follower::pin() {
  if (task_) {
    MutexLock lock(task_->mu);
    task_->pinned = true;
  }
}

SharedTasks::~SharedTasks() {
  close();
}

void SharedTasks::close() {
  std::vector<std::pair<std::shared_ptr<Task>, std::thread>> threads;
  {
    MutexLock lock(mu_);
    closed_ = true;
    for (auto& [key, task] : running_) {
      task->cancel = true;
    }
    threads.swap(threads_);
  }
  for (auto& [task, thread] : threads) {
    thread.join();
  }
}

SharedTasks::Follower SharedTasks::run_or_join(const std::string& key, TaskFn fn, EndFn on_end) {
  Follower f;
  MutexLock lock(mu_);
  std::shared_ptr<Task> previous;  // a task for `key` that is being cancelled
  if (auto it = running_.find(key); it != running_.end()) {
    {
      // Under the task's lock, as leave() raises `cancel` under it.
      MutexLock task_lock(it->second->mu);
      if (!it->second->cancel) {
        ++it->second->followers;
        f.task_ = it->second;
        return f;
      }
    }
    // Everyone left it and it is winding down: a new caller gets a new task,
    // which starts once the old one has ended (never two at once).
    previous = it->second;
  }
  auto task = std::make_shared<Task>();
  f.task_ = task;
  f.started_ = true;
  {
    // No other thread sees the task yet; its fields keep their one rule.
    MutexLock task_lock(task->mu);
    task->followers = 1;
    if (closed_) {
      task->result = Status(Error(ErrorCode::kShuttingDown, "shutting down"));
      return f;
    }
  }
  running_[key] = task;
  // Join the threads of tasks that have ended (their join is immediate).
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (it->first->thread_done) {
      it->second.join();
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
  auto body = [this, key, task, previous, fn = std::move(fn), on_end = std::move(on_end)] {
    if (previous) {
      MutexLock prev_lock(previous->mu);
      previous->cv.wait(
          prev_lock, [&]() LEMON_REQUIRES(previous->mu) { return previous->result.has_value(); });
    }
    Status result;
    try {
      result = fn(*task);
    } catch (const std::exception& e) {
      result = Error(ErrorCode::kInternal, std::string("task failed: ") + e.what());
    } catch (...) {
      result = Error(ErrorCode::kInternal, "task failed with an unknown exception");
    }
    {
      MutexLock map_lock(mu_);
      if (auto it = running_.find(key); it != running_.end() && it->second == task) {
        running_.erase(it);
      }
    }
    if (on_end) {
      on_end(result);  // after the task left the map: running(key) is false
    }
    {
      MutexLock task_lock(task->mu);
      task->result = std::move(result);
    }
    task->cv.notify_all();
    task->thread_done = true;
  };
  try {
    threads_.reserve(threads_.size() + 1);  // so that emplace_back cannot throw below
    std::thread thread(std::move(body));
    threads_.emplace_back(task, std::move(thread));
  } catch (const std::exception& e) {
    running_.erase(key);
    MutexLock task_lock(task->mu);
    task->result =
        Status(Error(ErrorCode::kInternal, std::string("cannot start a task: ") + e.what()));
  }
  return f;
}

bool SharedTasks::running(const std::string& key) const {
  MutexLock lock(mu_);
  return running_.contains(key);
}

Status follow(SharedTasks::Follower& f, const FollowHooks& hooks) {
  using clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  std::uint64_t seen = 0;       // the last version observed
  std::uint64_t delivered = 0;  // the last version given to on_progress
  TaskProgress latest;
  auto next_tick = clock::now() + hooks.tick_interval;
  auto next_progress = clock::now();
  while (true) {
    // Sleep until something changes, a pending update or a tick is due, or
    // at most 100 ms (the hooks are polled that often).
    auto now = clock::now();
    auto until = now + milliseconds(100);
    if (hooks.on_progress && delivered != seen) {
      until = std::min(until, next_progress);
    }
    if (hooks.on_tick) {
      until = std::min(until, next_tick);
    }
    auto timeout = std::chrono::duration_cast<milliseconds>(until - now);
    auto [progress, version] = f.wait_progress(seen, std::max(timeout, milliseconds(0)));
    if (version != seen) {
      seen = version;
      latest = progress;
    }
    if (auto result = f.result()) {
      if (result->ok() && hooks.on_progress && delivered != seen) {
        hooks.on_progress(latest);
      }
      return *result;
    }
    now = clock::now();
    if (hooks.stopping && hooks.stopping()) {
      f = SharedTasks::Follower();
      return Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down");
    }
    if (hooks.cancelled && hooks.cancelled()) {
      f = SharedTasks::Follower();  // the task is cancelled if nobody else follows
      return Error(ErrorCode::kCancelled, "the client left before the task ended");
    }
    if (hooks.on_progress && delivered != seen && now >= next_progress) {
      delivered = seen;
      next_progress = now + hooks.progress_interval;
      hooks.on_progress(latest);
    }
    if (hooks.on_tick && now >= next_tick) {
      next_tick = now + hooks.tick_interval;
      hooks.on_tick();
    }
  }
}

}  // namespace lemon::download
