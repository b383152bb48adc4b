#include "thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <exception>

#include "lemon/core/log.h"
#include "lemon/core/mutex.h"

namespace lemon::net::detail {

ConnectionThreadPool::ConnectionThreadPool(int max_connections, int spare_threads,
                                           std::size_t stack_bytes, Serve serve)
    : max_connections_(std::max(1, max_connections)),
      spare_threads_(std::max(0, spare_threads)),
      stack_bytes_(stack_bytes),
      serve_(std::move(serve)) {}

ConnectionThreadPool::~ConnectionThreadPool() {
  shutdown();
  join_all();
}

int ConnectionThreadPool::threads() const {
  MutexLock lock(mu_);
  return threads_;
}

ConnectionThreadPool::Admit ConnectionThreadPool::submit(PendingConnection& connection) {
  reap();
  MutexLock lock(mu_);
  if (stopping_) {
    return Admit::kFailed;
  }
  if (open_.load(std::memory_order_relaxed) >= max_connections_) {
    return Admit::kFull;
  }
  open_.fetch_add(1, std::memory_order_relaxed);
  connection.open_count = &open_;
  const int fd = connection.fd;
  queue_.push_back(std::move(connection));
  if (static_cast<std::size_t>(idle_) >= queue_.size()) {
    work_cv_.notify_one();
    return Admit::kAccepted;
  }
  ++threads_;
  lock.unlock();
  const bool started = start_thread();
  lock.lock();
  if (started) {
    return Admit::kAccepted;
  }
  --threads_;
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [fd](const PendingConnection& c) { return c.fd == fd; });
  if (it == queue_.end()) {
    return Admit::kAccepted;  // an existing thread already took it
  }
  connection = std::move(*it);
  queue_.erase(it);
  connection.release();
  return Admit::kFailed;
}

bool ConnectionThreadPool::start_thread() {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) {
    return false;
  }
  long page = ::sysconf(_SC_PAGESIZE);
  std::size_t page_size = page > 0 ? static_cast<std::size_t>(page) : 4096;
  std::size_t stack = std::max<std::size_t>(stack_bytes_, PTHREAD_STACK_MIN);
  stack = (stack + page_size - 1) / page_size * page_size;
  pthread_attr_setstacksize(&attr, stack);
  pthread_t tid;
  int rc = pthread_create(&tid, &attr, &ConnectionThreadPool::thread_main, this);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    logger("http")->error("cannot create a connection thread (error {})", rc);
    return false;
  }
  return true;
}

void* ConnectionThreadPool::thread_main(void* self) {
  static_cast<ConnectionThreadPool*>(self)->worker();
  return nullptr;
}

void ConnectionThreadPool::worker() {
  MutexLock lock(mu_);
  for (;;) {
    if (queue_.empty() && !stopping_) {
      ++idle_;
      bool retire = false;
      while (queue_.empty() && !stopping_) {
        if (work_cv_.wait_for(lock, kIdleExit) == std::cv_status::timeout && queue_.empty() &&
            !stopping_ && idle_ > spare_threads_) {
          retire = true;
          break;
        }
      }
      --idle_;
      if (retire) {
        break;
      }
    }
    if (queue_.empty()) {
      break;  // stopping
    }
    PendingConnection connection = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      serve_(connection);
    } catch (const std::exception& e) {
      logger("http")->error("connection thread: {}", e.what());
    } catch (...) {
      logger("http")->error("connection thread: unknown exception");
    }
    connection.release();
    lock.lock();
  }
  --threads_;
  exited_.push_back(pthread_self());
  exit_cv_.notify_all();
}

void ConnectionThreadPool::shutdown() {
  MutexLock lock(mu_);
  stopping_ = true;
  work_cv_.notify_all();
}

void ConnectionThreadPool::join_all() {
  {
    MutexLock lock(mu_);
    exit_cv_.wait(lock, [this]() LEMON_REQUIRES(mu_) { return threads_ == 0; });
  }
  reap();
}

void ConnectionThreadPool::reap() {
  std::vector<pthread_t> done;
  {
    MutexLock lock(mu_);
    done.swap(exited_);
  }
  for (pthread_t tid : done) {
    pthread_join(tid, nullptr);
  }
}

}  // namespace lemon::net::detail
