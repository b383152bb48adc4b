// The server's connection threads. Each accepted connection goes to an idle
// thread, or to a new one when none is idle, up to a limit; a thread serves
// its connection until it closes. Up to `spare_threads` idle threads wait for
// work indefinitely; extra idle threads exit after kIdleExit. Threads are
// plain pthreads with a chosen stack size; exited ones are joined lazily.
//
// Internal to src/net. Thread-safety: submit() from the acceptor threads,
// shutdown() from any thread, join_all() from the thread running the server.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "connection_registry.h"
#include "lemon/core/mutex.h"

namespace lemon::net::detail {

struct PendingConnection {
  int fd = -1;
  std::string remote_addr;
  std::atomic<int>* open_count = nullptr;  // set by the pool
  ConnectionRegistry* registry = nullptr;  // set by the acceptor
  std::uint64_t registry_id = 0;

  // Stops counting this connection as open (in the pool and the registry).
  // Called just before its socket is shut down, so a client that saw the
  // close also sees the slot free; the pool calls it after serving if
  // nothing did earlier.
  void release() {
    if (open_count != nullptr) {
      open_count->fetch_sub(1, std::memory_order_relaxed);
      open_count = nullptr;
    }
    if (registry != nullptr) {
      registry->leave(registry_id);
      registry = nullptr;
    }
  }
};

class ConnectionThreadPool {
 public:
  // Serves one connection and closes its fd.
  using Serve = std::function<void(PendingConnection&)>;

  static constexpr std::chrono::seconds kIdleExit{30};

  ConnectionThreadPool(int max_connections, int spare_threads, std::size_t stack_bytes,
                       Serve serve);
  ~ConnectionThreadPool();  // shutdown() and join_all()
  ConnectionThreadPool(const ConnectionThreadPool&) = delete;
  ConnectionThreadPool& operator=(const ConnectionThreadPool&) = delete;

  enum class Admit {
    kAccepted,  // the pool owns the fd now
    kFull,      // max_connections reached; the caller still owns the fd
    kFailed,    // stopping or no thread could be created; caller owns the fd
  };
  Admit submit(PendingConnection& connection);

  // Wakes idle threads so they exit once nothing is queued. Never blocks for
  // long. Busy threads exit after their connection closes.
  void shutdown();

  // Blocks until every thread has exited, then joins them.
  void join_all();

  int open_connections() const { return open_.load(std::memory_order_relaxed); }
  int threads() const;

 private:
  static void* thread_main(void* self);
  void worker();
  bool start_thread();
  void reap();  // joins threads that announced their exit

  const int max_connections_;
  const int spare_threads_;
  const std::size_t stack_bytes_;
  const Serve serve_;

  mutable Mutex mu_;
  CondVar work_cv_;  // queued work or shutdown
  CondVar exit_cv_;  // a thread exited
  std::deque<PendingConnection> queue_ LEMON_GUARDED_BY(mu_);
  std::vector<pthread_t> exited_ LEMON_GUARDED_BY(mu_);  // exited (or exiting) threads to join
  int threads_ LEMON_GUARDED_BY(mu_) = 0;
  int idle_ LEMON_GUARDED_BY(mu_) = 0;
  bool stopping_ LEMON_GUARDED_BY(mu_) = false;
  std::atomic<int> open_{0};
};

}  // namespace lemon::net::detail
