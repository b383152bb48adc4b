// Mutexes the compiler checks. Clang's thread-safety analysis
// (-Wthread-safety, on in every clang build) proves at compile time that each
// field marked LEMON_GUARDED_BY(mu) is touched only with mu held, and that a
// function marked LEMON_REQUIRES(mu) is called only with it held. Under GCC
// the annotations expand to nothing.
//
// Mutex, SharedMutex: std::mutex / std::shared_mutex with the capability
// attribute. MutexLock, SharedMutexLock and ReaderLock hold one for a scope
// (and may unlock and lock it again within it). CondVar waits on a MutexLock.
// A lambda that reads guarded state while the lock is held, such as a wait
// predicate, says so: `[&]() LEMON_REQUIRES(mu_) { return done_; }`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <utility>

#if defined(__clang__)
#define LEMON_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define LEMON_THREAD_ANNOTATION(x)
#endif

#define LEMON_CAPABILITY(x) LEMON_THREAD_ANNOTATION(capability(x))
#define LEMON_SCOPED_CAPABILITY LEMON_THREAD_ANNOTATION(scoped_lockable)
#define LEMON_GUARDED_BY(x) LEMON_THREAD_ANNOTATION(guarded_by(x))
#define LEMON_PT_GUARDED_BY(x) LEMON_THREAD_ANNOTATION(pt_guarded_by(x))
#define LEMON_REQUIRES(...) LEMON_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define LEMON_REQUIRES_SHARED(...) LEMON_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define LEMON_EXCLUDES(...) LEMON_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define LEMON_ACQUIRE(...) LEMON_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define LEMON_ACQUIRE_SHARED(...) LEMON_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define LEMON_RELEASE(...) LEMON_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define LEMON_RELEASE_SHARED(...) LEMON_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define LEMON_RELEASE_GENERIC(...) LEMON_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define LEMON_TRY_ACQUIRE(...) LEMON_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define LEMON_RETURN_CAPABILITY(x) LEMON_THREAD_ANNOTATION(lock_returned(x))
#define LEMON_NO_THREAD_SAFETY_ANALYSIS LEMON_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace lemon {

class LEMON_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() LEMON_ACQUIRE() { mu_.lock(); }
  void unlock() LEMON_RELEASE() { mu_.unlock(); }
  bool try_lock() LEMON_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

class LEMON_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() LEMON_ACQUIRE() { mu_.lock(); }
  void unlock() LEMON_RELEASE() { mu_.unlock(); }
  void lock_shared() LEMON_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() LEMON_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a Mutex from construction to destruction, except between unlock()
// and lock(). Not shared between threads.
class LEMON_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) LEMON_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() LEMON_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() LEMON_RELEASE() { lock_.unlock(); }
  void lock() LEMON_ACQUIRE() { lock_.lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

// Holds a SharedMutex exclusively for a scope.
class LEMON_SCOPED_CAPABILITY SharedMutexLock {
 public:
  explicit SharedMutexLock(SharedMutex& mu) LEMON_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~SharedMutexLock() LEMON_RELEASE() { mu_.unlock(); }
  SharedMutexLock(const SharedMutexLock&) = delete;
  SharedMutexLock& operator=(const SharedMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex shared (for reading) for a scope.
class LEMON_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) LEMON_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() LEMON_RELEASE_GENERIC() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// std::condition_variable over a MutexLock. Each wait returns with the lock
// held again, so the analysis keeps counting it as held.
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(MutexLock& lock) { cv_.wait(lock.lock_); }
  template <class Predicate>
  void wait(MutexLock& lock, Predicate ready) {
    cv_.wait(lock.lock_, std::move(ready));
  }
  template <class Rep, class Period>
  std::cv_status wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout) {
    return cv_.wait_for(lock.lock_, timeout);
  }
  template <class Rep, class Period, class Predicate>
  bool wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout,
                Predicate ready) {
    return cv_.wait_for(lock.lock_, timeout, std::move(ready));
  }
  template <class Clock, class Duration>
  std::cv_status wait_until(MutexLock& lock,
                            const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv_.wait_until(lock.lock_, deadline);
  }
  template <class Clock, class Duration, class Predicate>
  bool wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& deadline,
                  Predicate ready) {
    return cv_.wait_until(lock.lock_, deadline, std::move(ready));
  }

 private:
  std::condition_variable cv_;
};

}  // namespace lemon
