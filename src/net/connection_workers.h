// The server's connection threads, and where idle connections wait for them
// (no blocked thread per idle keep-alive connection).
//
// Every open connection is either parked or being served. A parked one is
// registered, one-shot, in an epoll set; the worker threads themselves wait
// on that set, so a worker that has just parked its connection picks up any
// ready one without sleeping, and a request's bytes wake exactly one worker.
// That worker serves the connection until no byte of a next request is at
// hand, then parks it again. Threads are created when the last waiting one
// takes a connection, up to a limit, so a long stream never starves /health
// or a new request; idle ones beyond `spare_threads` exit after kIdleExit.
//
// Ownership: a parked connection belongs to the epoll set, and only the
// worker that receives its event takes it (and alone may close it). Anything
// else that must end an idle connection shuts its socket down instead, which
// makes it readable: the keep-alive deadline (a timerfd armed for the oldest
// parked connection), the registry making room (#23), and stop(). Events
// name a slot and its generation, so an event for a connection that is gone
// is ignored.
//
// Stop: submit() refuses, parking is refused (the connection is served to
// its end at once: a request already sent gets 503, an idle one is closed),
// parked connections' sockets are shut for reading, and every thread exits
// once no connection is open.
//
// Internal to src/net. Thread-safety: submit() from the acceptor threads,
// shutdown() from any thread, join_all() from the thread running the server.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "connection.h"
#include "io.h"
#include "lemon/core/mutex.h"

namespace lemon::net::detail {

class ConnectionWorkers {
 public:
  static constexpr std::chrono::seconds kIdleExit{30};

  // A connection is closed once idle for `keep_alive_timeout`; one that is
  // parked again after a request was already waited for `park_after` by its
  // thread (ServerOptions::park_after), which counts towards it.
  ConnectionWorkers(int max_connections, int spare_threads, std::size_t stack_bytes,
                    std::chrono::milliseconds keep_alive_timeout,
                    std::chrono::milliseconds park_after);
  ~ConnectionWorkers();  // shutdown() and join_all()
  ConnectionWorkers(const ConnectionWorkers&) = delete;
  ConnectionWorkers& operator=(const ConnectionWorkers&) = delete;

  enum class Admit {
    kAccepted,  // the workers own the connection now
    kFull,      // max_connections reached; the caller still owns it
    kFailed,    // stopping, or it could not be registered; caller owns it
  };
  // Parks a new connection until its first request's bytes arrive.
  Admit submit(std::unique_ptr<ClientConnection>& connection);

  // Stops as described above. Never blocks for long.
  void shutdown();

  // Blocks until every thread has exited, then joins them.
  void join_all();

  int open_connections() const { return open_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::unique_ptr<ClientConnection> connection;
    std::uint32_t generation = 0;
    bool parked = false;   // waits in the epoll set for its event
    bool shut = false;     // its socket was shut down to end it
    bool expired = false;  // ... because its keep-alive deadline passed
    Clock::time_point deadline;
    int prev = -1;  // the keep-alive list, by deadline (parked, not shut)
    int next = -1;
  };

  static void* thread_main(void* self);
  void worker();
  bool start_thread();
  // Undoes a thread counted before it was started, when starting it failed.
  void unreserve_thread_locked() LEMON_REQUIRES(mu_);
  // Starts a thread if none waits on the set and the limit allows.
  void ensure_waiter();
  void reap();  // joins threads that announced their exit

  // A parked connection's event: the connection, now owned by the caller, or
  // null when the event is stale.
  // `expired`: its keep-alive deadline passed before the event was taken.
  ClientConnection* take(std::uint64_t key, int& slot, bool& expired);
  // Parks a served connection; false when stopping.
  bool park(int slot);
  // Frees a closed connection's slot (closing it if serving did not).
  void forget(int slot);
  std::unique_ptr<ClientConnection> free_slot_locked(int slot) LEMON_REQUIRES(mu_);
  void on_deadline();
  // Returns true when the calling thread should exit.
  bool on_stop();
  void rearm_stop();
  // Parks `slot` for `idle_for`, and sets the timer if it is due first.
  void park_locked(int slot, std::chrono::milliseconds idle_for) LEMON_REQUIRES(mu_);
  // Undoes park_locked() for a connection that could not be watched.
  void unpark_locked(int slot) LEMON_REQUIRES(mu_);
  void link_locked(int slot) LEMON_REQUIRES(mu_);
  void unlink_locked(int slot) LEMON_REQUIRES(mu_);
  void shut_locked(int slot) LEMON_REQUIRES(mu_);

  const int max_connections_;
  const int max_threads_;
  const int spare_threads_;
  const std::size_t stack_bytes_;
  const std::chrono::milliseconds keep_alive_timeout_;
  const std::chrono::milliseconds parked_again_for_;  // what is left of it after park_after
  UniqueFd epoll_;
  UniqueFd stop_event_;  // eventfd: readable once shutdown() ran
  UniqueFd timer_;       // timerfd: the oldest parked connection's deadline

  std::atomic<int> open_{0};  // before slots_: a connection's release() counts it down

  mutable Mutex mu_;
  CondVar exit_cv_;  // a thread exited
  std::vector<Slot> slots_ LEMON_GUARDED_BY(mu_);
  std::vector<int> free_slots_ LEMON_GUARDED_BY(mu_);
  int oldest_ LEMON_GUARDED_BY(mu_) = -1;  // the keep-alive list
  int newest_ LEMON_GUARDED_BY(mu_) = -1;
  bool timer_armed_ LEMON_GUARDED_BY(mu_) = false;
  Clock::time_point timer_at_ LEMON_GUARDED_BY(mu_);     // when it fires, if armed
  int live_ LEMON_GUARDED_BY(mu_) = 0;                   // slots in use
  std::vector<pthread_t> exited_ LEMON_GUARDED_BY(mu_);  // exited (or exiting) threads to join
  int threads_ LEMON_GUARDED_BY(mu_) = 0;
  bool stopping_ LEMON_GUARDED_BY(mu_) = false;
  std::atomic<int> waiting_{0};  // threads in (or about to enter) epoll_wait
};

}  // namespace lemon::net::detail
