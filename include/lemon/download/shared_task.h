// SharedTasks: coalesces work by key (two pulls of the
// same model share one download). The first caller for a key starts the task on
// its own thread; later callers for the same key follow it. Each caller holds
// a Follower; when the last follower of a running task goes away, the task's
// cancel flag is raised (the task decides what that means; a download keeps
// its partial file). A task may be pinned so that it runs to the end without
// followers.
//
// Followers observe progress (a TaskProgress snapshot, with a version number
// that increases on every change) and the final Status.
//
// Ownership: SharedTasks owns its task threads and joins them in its
// destructor (after raising every cancel flag).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"

namespace lemon::download {

// What a multi-file task reports; file fields describe the current file.
struct TaskProgress {
  std::string file;
  int file_index = 0;  // 0-based index of `file`
  int total_files = 0;
  std::uint64_t file_bytes_done = 0;
  std::uint64_t file_bytes_total = 0;
  std::uint64_t bytes_done = 0;  // over all files
  std::uint64_t bytes_total = 0;
};

// Given to the task function: publish progress, check for cancellation.
class TaskContext {
 public:
  virtual ~TaskContext() = default;
  virtual void publish(const TaskProgress& progress) = 0;
  virtual bool cancelled() const = 0;
};

using TaskFn = std::function<Status(TaskContext&)>;
// Called with a task's result once it no longer counts as running, before
// its followers see the result (for logs that tests may wait on).
using EndFn = std::function<void(const Status&)>;

class SharedTasks {
  struct Task;

 public:
  class Follower {
   public:
    Follower() = default;
    ~Follower();
    Follower(Follower&&) noexcept;
    Follower& operator=(Follower&&) noexcept;
    Follower(const Follower&) = delete;
    Follower& operator=(const Follower&) = delete;

    // True when this caller started the task (false: joined a running one).
    bool started() const { return started_; }
    // Waits until the progress version exceeds `seen_version`, the task ends,
    // or `timeout` passes. Returns the current snapshot and its version.
    std::pair<TaskProgress, std::uint64_t> wait_progress(std::uint64_t seen_version,
                                                         std::chrono::milliseconds timeout) const;
    // The result once the task has ended; nullopt while it runs.
    std::optional<Status> result() const;
    // Keeps the task running even when every follower leaves.
    void pin();

   private:
    friend class SharedTasks;
    std::shared_ptr<Task> task_;
    bool started_ = false;
  };

  SharedTasks() = default;
  ~SharedTasks();
  SharedTasks(const SharedTasks&) = delete;
  SharedTasks& operator=(const SharedTasks&) = delete;

  // Follows the running task for `key`, or starts `fn` as a new one. A task
  // whose followers all left (cancel raised) is not joined: the new task
  // starts once it has ended.
  Follower run_or_join(const std::string& key, TaskFn fn, EndFn on_end = {});
  // True while a task for `key` runs.
  bool running(const std::string& key) const;
  // Cancels every task, refuses new ones (they end kShuttingDown) and waits
  // for every task thread, so no `on_end` runs after it returns. Idempotent;
  // the destructor calls it. Not from a task's own thread.
  void close();

 private:
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<Task>> running_ LEMON_GUARDED_BY(mu_);
  std::vector<std::pair<std::shared_ptr<Task>, std::thread>> threads_ LEMON_GUARDED_BY(mu_);
  bool closed_ LEMON_GUARDED_BY(mu_) = false;
};

// How a caller follows a task to its end.
struct FollowHooks {
  // Polled about every 100 ms; true means the caller left: it stops
  // following and gets kCancelled.
  std::function<bool()> cancelled;
  // Polled likewise; true means the process stops: kShuttingDown.
  std::function<bool()> stopping;
  // Each new progress snapshot, at most every `progress_interval`.
  std::function<void(const TaskProgress&)> on_progress;
  std::chrono::milliseconds progress_interval{100};
  // Called about every tick_interval while waiting (SSE keepalives).
  std::function<void()> on_tick;
  std::chrono::milliseconds tick_interval{1000};
};

// Follows `f` until its task ends (its Status) or a hook says stop. Sleeps
// between changes; never spins. On kCancelled/kShuttingDown `f` is released.
Status follow(SharedTasks::Follower& f, const FollowHooks& hooks);

}  // namespace lemon::download
