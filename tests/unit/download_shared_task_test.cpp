#include "lemon/download/shared_task.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "support/gate.h"

namespace lemon::download {
namespace {

using lemon::testing::Gate;
using namespace std::chrono_literals;

// Waits (bounded) for the task followed by `f` to end; its result.
std::optional<Status> wait_result(const SharedTasks::Follower& f) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  std::uint64_t seen = 0;
  while (!f.result() && std::chrono::steady_clock::now() < deadline) {
    seen = f.wait_progress(seen, 1s).second;
  }
  return f.result();
}

// A task body that runs until cancelled or `finish` opens; polls the flag
// the way a download does.
Status run_until(TaskContext& ctx, Gate& finish) {
  while (!ctx.cancelled()) {
    if (finish.wait(1ms)) {
      return ok_status();
    }
  }
  return Error(ErrorCode::kCancelled, "cancelled");
}

TEST(DownloadSharedTasks, TwoFollowersShareOneRun) {
  SharedTasks tasks;
  Gate finish;
  std::atomic<int> calls{0};
  std::atomic<int> other_calls{0};
  auto first = tasks.run_or_join("k", [&](TaskContext&) {
    ++calls;
    EXPECT_TRUE(finish.wait());
    return ok_status();
  });
  auto second = tasks.run_or_join("k", [&](TaskContext&) {
    ++other_calls;
    return ok_status();
  });
  EXPECT_TRUE(first.started());
  EXPECT_FALSE(second.started());
  EXPECT_TRUE(tasks.running("k"));
  EXPECT_FALSE(first.result().has_value());
  finish.open();
  auto r1 = wait_result(first);
  auto r2 = wait_result(second);
  ASSERT_TRUE(r1.has_value());
  ASSERT_TRUE(r2.has_value());
  EXPECT_TRUE(r1->ok());
  EXPECT_TRUE(r2->ok());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(other_calls.load(), 0);
}

TEST(DownloadSharedTasks, DifferentKeysRunSeparately) {
  SharedTasks tasks;
  auto a = tasks.run_or_join("a", [](TaskContext&) { return ok_status(); });
  auto b = tasks.run_or_join(
      "b", [](TaskContext&) { return Status(Error(ErrorCode::kRemoteNotFound, "nope")); });
  EXPECT_TRUE(a.started());
  EXPECT_TRUE(b.started());
  auto ra = wait_result(a);
  auto rb = wait_result(b);
  ASSERT_TRUE(ra && rb);
  EXPECT_TRUE(ra->ok());
  ASSERT_FALSE(rb->ok());
  EXPECT_EQ(rb->error().code(), ErrorCode::kRemoteNotFound);
}

TEST(DownloadSharedTasks, EndedTaskIsStartedAgain) {
  SharedTasks tasks;
  std::atomic<int> calls{0};
  auto fn = [&](TaskContext&) {
    ++calls;
    return ok_status();
  };
  auto first = tasks.run_or_join("k", fn);
  ASSERT_TRUE(wait_result(first).has_value());
  // The result is stored after the task left the running map.
  EXPECT_FALSE(tasks.running("k"));
  auto second = tasks.run_or_join("k", fn);
  EXPECT_TRUE(second.started());
  ASSERT_TRUE(wait_result(second).has_value());
  EXPECT_EQ(calls.load(), 2);
}

TEST(DownloadSharedTasks, CancelRaisedWhenLastFollowerLeaves) {
  SharedTasks tasks;
  Gate entered;
  Gate finish;  // never opened: the task ends only when cancelled
  Gate ended;
  std::atomic<TaskContext*> context{nullptr};
  std::atomic<bool> saw_cancel{false};
  std::optional<SharedTasks::Follower> first = tasks.run_or_join("k", [&](TaskContext& ctx) {
    context = &ctx;
    entered.open();
    Status s = run_until(ctx, finish);
    saw_cancel = !s.ok() && s.error().code() == ErrorCode::kCancelled;
    ended.open();
    return s;
  });
  std::optional<SharedTasks::Follower> second = tasks.run_or_join("k", nullptr);
  ASSERT_TRUE(entered.wait());
  first.reset();
  // One follower is left: the task goes on.
  EXPECT_FALSE(context.load()->cancelled());
  second.reset();
  ASSERT_TRUE(ended.wait());
  EXPECT_TRUE(saw_cancel.load());
}

TEST(DownloadSharedTasks, ACallerDuringCancellationGetsAFreshTaskAfterTheOldEnds) {
  SharedTasks tasks;
  Gate old_cancelled;  // the old task saw its cancel flag
  Gate release_old;    // lets the old task finish winding down
  std::atomic<int> runs{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> old_running{false};
  auto old_fn = [&](TaskContext& ctx) -> Status {
    ++runs;
    old_running = true;
    while (!ctx.cancelled()) {
      std::this_thread::yield();
    }
    old_cancelled.open();
    release_old.wait(10s);
    old_running = false;
    return Error(ErrorCode::kCancelled, "cancelled");
  };
  { auto first = tasks.run_or_join("k", old_fn); }  // the only follower leaves: cancel
  ASSERT_TRUE(old_cancelled.wait());
  auto second = tasks.run_or_join("k", [&](TaskContext&) -> Status {
    ++runs;
    overlapped = old_running.load();
    return ok_status();
  });
  EXPECT_TRUE(second.started()) << "a task being cancelled is not joined";
  EXPECT_FALSE(second.result().has_value());
  release_old.open();
  auto result = wait_result(second);
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->ok());
  EXPECT_FALSE(overlapped) << "the new task started before the old one ended";
  EXPECT_EQ(runs, 2);
}

TEST(DownloadSharedTasks, TheEndHookRunsOnceTheTaskNoLongerCounts) {
  SharedTasks tasks;
  std::atomic<bool> running_in_hook{true};
  Gate hook_ran;
  auto f = tasks.run_or_join(
      "k", [](TaskContext&) -> Status { return Error(ErrorCode::kNetworkError, "down"); },
      [&](const Status& s) {
        running_in_hook = tasks.running("k");
        EXPECT_EQ(s.error().code(), ErrorCode::kNetworkError);
        hook_ran.open();
      });
  ASSERT_TRUE(hook_ran.wait());
  EXPECT_FALSE(running_in_hook);
  auto result = wait_result(f);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->error().code(), ErrorCode::kNetworkError);
}

TEST(DownloadSharedTasks, PinnedTaskIsNotCancelled) {
  SharedTasks tasks;
  Gate entered;
  Gate finish;
  Gate ended;
  std::atomic<TaskContext*> context{nullptr};
  std::atomic<bool> completed{false};
  {
    auto f = tasks.run_or_join("k", [&](TaskContext& ctx) {
      context = &ctx;
      entered.open();
      Status s = run_until(ctx, finish);
      completed = s.ok();
      ended.open();
      return s;
    });
    ASSERT_TRUE(entered.wait());
    f.pin();
  }
  EXPECT_FALSE(context.load()->cancelled());
  finish.open();
  ASSERT_TRUE(ended.wait());
  EXPECT_TRUE(completed.load());
}

TEST(DownloadSharedTasks, MovedFromFollowerDoesNothing) {
  SharedTasks tasks;
  Gate entered;
  Gate finish;
  std::atomic<TaskContext*> context{nullptr};
  auto target = std::make_unique<SharedTasks::Follower>();
  {
    auto f = tasks.run_or_join("k", [&](TaskContext& ctx) {
      context = &ctx;
      entered.open();
      return run_until(ctx, finish);
    });
    ASSERT_TRUE(entered.wait());
    *target = std::move(f);
    EXPECT_TRUE(target->started());
  }  // the moved-from follower is destroyed here
  EXPECT_FALSE(context.load()->cancelled());
  EXPECT_FALSE(target->result().has_value());
  finish.open();
  auto r = wait_result(*target);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->ok());
}

TEST(DownloadSharedTasks, WaitProgressSeesPublishedProgress) {
  SharedTasks tasks;
  Gate published;
  Gate finish;
  auto f = tasks.run_or_join("k", [&](TaskContext& ctx) {
    TaskProgress p;
    p.file = "model.gguf";
    p.total_files = 2;
    p.file_bytes_done = 5;
    p.file_bytes_total = 10;
    p.bytes_done = 5;
    p.bytes_total = 20;
    ctx.publish(p);
    published.open();
    EXPECT_TRUE(finish.wait());
    p.file_index = 1;
    p.bytes_done = 20;
    ctx.publish(p);
    return ok_status();
  });
  ASSERT_TRUE(published.wait());
  auto [progress, version] = f.wait_progress(0, 10s);
  EXPECT_GE(version, 1u);
  EXPECT_EQ(progress.file, "model.gguf");
  EXPECT_EQ(progress.file_bytes_done, 5u);
  EXPECT_EQ(progress.bytes_total, 20u);
  finish.open();
  ASSERT_TRUE(wait_result(f).has_value());
  auto [last, last_version] = f.wait_progress(version, 10s);
  EXPECT_GT(last_version, version);
  EXPECT_EQ(last.file_index, 1);
  EXPECT_EQ(last.bytes_done, 20u);
}

TEST(DownloadSharedTasks, ExceptionBecomesInternal) {
  SharedTasks tasks;
  auto f = tasks.run_or_join("k", [](TaskContext&) -> Status { throw std::runtime_error("boom"); });
  auto r = wait_result(f);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->ok());
  EXPECT_EQ(r->error().code(), ErrorCode::kInternal);
  EXPECT_NE(r->error().message().find("boom"), std::string::npos);
}

TEST(DownloadSharedTasks, DestructorCancelsAndFollowersOutliveIt) {
  auto tasks = std::make_unique<SharedTasks>();
  Gate entered;
  Gate finish;  // never opened
  auto f = tasks->run_or_join("k", [&](TaskContext& ctx) {
    entered.open();
    return run_until(ctx, finish);
  });
  f.pin();  // even a pinned task is cancelled on shutdown
  ASSERT_TRUE(entered.wait());
  tasks.reset();  // raises the cancel flag and joins
  auto r = f.result();
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->ok());
  EXPECT_EQ(r->error().code(), ErrorCode::kCancelled);
  auto [progress, version] = f.wait_progress(0, 1ms);
  EXPECT_EQ(version, 0u);
}

TEST(DownloadSharedTasks, EmptyFollowerIsHarmless) {
  SharedTasks::Follower f;
  EXPECT_FALSE(f.started());
  f.pin();
  auto [progress, version] = f.wait_progress(0, 1ms);
  EXPECT_EQ(version, 0u);
}

}  // namespace
}  // namespace lemon::download
