#include "connection_workers.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <exception>

#include "lemon/core/log.h"

namespace lemon::net::detail {
namespace {

// Event keys: a connection's is its generation (high half) and slot (low
// half); slots stay far below these two.
constexpr std::uint64_t kStopKey = ~std::uint64_t{0};
constexpr std::uint64_t kDeadlineKey = ~std::uint64_t{0} - 1;
constexpr std::uint32_t kConnectionEvents = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;

std::uint64_t connection_key(int slot, std::uint32_t generation) {
  return (std::uint64_t{generation} << 32) | static_cast<std::uint32_t>(slot);
}

bool watch(int epoll, int op, int fd, std::uint32_t events, std::uint64_t key) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  return ::epoll_ctl(epoll, op, fd, &ev) == 0;
}

void arm_timer(int timer, Clock::time_point at) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch());
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(ns.count() / 1000000000);
  spec.it_value.tv_nsec = static_cast<long>(ns.count() % 1000000000);
  if (spec.it_value.tv_sec <= 0 && spec.it_value.tv_nsec <= 0) {
    spec.it_value.tv_nsec = 1;  // zero would disarm it
  }
  // steady_clock is CLOCK_MONOTONIC, which the timer counts in.
  if (::timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    logger("http")->error("cannot set the keep-alive timer: {}", errno_text(errno));
  }
}

}  // namespace

ConnectionWorkers::ConnectionWorkers(int max_connections, int spare_threads,
                                     std::size_t stack_bytes,
                                     std::chrono::milliseconds keep_alive_timeout,
                                     std::chrono::milliseconds park_after)
    : max_connections_(std::max(1, max_connections)),
      // Busy connections, those closing after an error (up to a second of
      // lingering each, no longer counted as open), and one waiting.
      max_threads_(2 * max_connections_ + 1),
      spare_threads_(std::max(0, spare_threads)),
      stack_bytes_(stack_bytes),
      keep_alive_timeout_(keep_alive_timeout),
      parked_again_for_(keep_alive_timeout -
                        std::clamp(park_after, std::chrono::milliseconds(0), keep_alive_timeout)),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      stop_event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      timer_(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) {
  if (!epoll_.valid() || !stop_event_.valid() || !timer_.valid() ||
      !watch(epoll_.get(), EPOLL_CTL_ADD, stop_event_.get(), EPOLLIN | EPOLLONESHOT, kStopKey) ||
      !watch(epoll_.get(), EPOLL_CTL_ADD, timer_.get(), EPOLLIN | EPOLLONESHOT, kDeadlineKey)) {
    logger("http")->error("cannot set up the connection workers: {}", errno_text(errno));
    epoll_.reset();  // submit() refuses every connection
  }
}

ConnectionWorkers::~ConnectionWorkers() {
  shutdown();
  join_all();
  MutexLock lock(mu_);
  slots_.clear();  // none, unless no thread could ever be started
}

void ConnectionWorkers::link_locked(int slot) {
  // Ordered by deadline: from the newest back, past the few parked again
  // later than it but due earlier (their wait counted towards it).
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  int before = newest_;
  while (before >= 0 && slots_[static_cast<std::size_t>(before)].deadline > s.deadline) {
    before = slots_[static_cast<std::size_t>(before)].prev;
  }
  s.prev = before;
  s.next = before >= 0 ? slots_[static_cast<std::size_t>(before)].next : oldest_;
  (before >= 0 ? slots_[static_cast<std::size_t>(before)].next : oldest_) = slot;
  (s.next >= 0 ? slots_[static_cast<std::size_t>(s.next)].prev : newest_) = slot;
}

void ConnectionWorkers::park_locked(int slot, std::chrono::milliseconds idle_for) {
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  s.parked = true;
  s.shut = false;
  s.deadline = Clock::now() + idle_for;
  link_locked(slot);
  if (!timer_armed_ || s.deadline < timer_at_) {
    // Under the lock, so that two threads cannot set it out of order.
    timer_armed_ = true;
    timer_at_ = s.deadline;
    arm_timer(timer_.get(), timer_at_);
  }
}

void ConnectionWorkers::unpark_locked(int slot) {
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  if (s.parked && !s.shut) {
    unlink_locked(slot);
  }
  s.parked = false;
}

void ConnectionWorkers::unlink_locked(int slot) {
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  (s.prev >= 0 ? slots_[static_cast<std::size_t>(s.prev)].next : oldest_) = s.next;
  (s.next >= 0 ? slots_[static_cast<std::size_t>(s.next)].prev : newest_) = s.prev;
  s.prev = s.next = -1;
}

void ConnectionWorkers::shut_locked(int slot) {
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  unlink_locked(slot);
  s.shut = true;
  // Readable now: the worker that gets its event finds the end (or a request
  // already sent, which is answered 503 when stopping) and closes it.
  ::shutdown(s.connection->fd(), stopping_ ? SHUT_RD : SHUT_RDWR);
}

ConnectionWorkers::Admit ConnectionWorkers::submit(std::unique_ptr<ClientConnection>& connection) {
  reap();
  const int fd = connection->fd();
  int slot = -1;
  std::uint32_t generation = 0;
  bool spawn = false;
  {
    MutexLock lock(mu_);
    if (stopping_ || !epoll_.valid()) {
      return Admit::kFailed;
    }
    if (open_.load(std::memory_order_relaxed) >= max_connections_) {
      return Admit::kFull;
    }
    open_.fetch_add(1, std::memory_order_relaxed);
    connection->pending().open_count = &open_;
    if (free_slots_.empty()) {
      slot = static_cast<int>(slots_.size());
      slots_.emplace_back();
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    s.connection = std::move(connection);
    park_locked(slot, keep_alive_timeout_);
    generation = s.generation;
    ++live_;
    if (waiting_.load(std::memory_order_relaxed) == 0 && threads_ < max_threads_) {
      spawn = true;
      ++threads_;
      waiting_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const bool watched =
      watch(epoll_.get(), EPOLL_CTL_ADD, fd, kConnectionEvents, connection_key(slot, generation));
  if (!watched) {
    logger("http")->error("cannot watch a connection: {}", errno_text(errno));
  }
  const bool started = !spawn || (watched && start_thread());
  bool last = false;
  {
    MutexLock lock(mu_);
    if (spawn && !started) {
      unreserve_thread_locked();
    }
    const Slot& s = slots_[static_cast<std::size_t>(slot)];
    if (s.generation != generation || !s.parked) {
      return Admit::kAccepted;  // a thread took it already (and may be done)
    }
    if (watched && threads_ > 0) {
      return Admit::kAccepted;  // a thread takes it when its bytes arrive
    }
    // Nobody could ever take it: the caller answers it. An event already
    // on its way finds the generation changed.
    if (watched) {
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    }
    connection = free_slot_locked(slot);
    last = stopping_ && live_ == 0;
  }
  if (last) {
    rearm_stop();
  }
  connection->pending().release();
  return Admit::kFailed;
}

void ConnectionWorkers::ensure_waiter() {
  {
    MutexLock lock(mu_);
    // Also while stopping: parked connections are then ended in parallel.
    if (threads_ >= max_threads_ || waiting_.load(std::memory_order_relaxed) > 0) {
      return;
    }
    ++threads_;
    waiting_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!start_thread()) {
    MutexLock lock(mu_);
    unreserve_thread_locked();
  }
}

void ConnectionWorkers::unreserve_thread_locked() {
  --threads_;
  waiting_.fetch_sub(1, std::memory_order_relaxed);
  if (threads_ == 0) {
    exit_cv_.notify_all();  // join_all() may wait for this one
    if (live_ > 0) {
      // Served once a thread can be started: the next connection tries.
      logger("http")->error("no connection thread is running; {} connections wait", live_);
    }
  }
}

bool ConnectionWorkers::start_thread() {
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
  int rc = pthread_create(&tid, &attr, &ConnectionWorkers::thread_main, this);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    logger("http")->error("cannot create a connection thread (error {})", rc);
    return false;
  }
  return true;
}

void* ConnectionWorkers::thread_main(void* self) {
  static_cast<ConnectionWorkers*>(self)->worker();
  return nullptr;
}

ClientConnection* ConnectionWorkers::take(std::uint64_t key, int& slot, bool& expired) {
  slot = static_cast<int>(key & 0xffffffffu);
  const auto generation = static_cast<std::uint32_t>(key >> 32);
  MutexLock lock(mu_);
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots_.size()) {
    return nullptr;
  }
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  if (s.generation != generation || !s.parked || !s.connection) {
    return nullptr;  // gone, or not parked: a stale event
  }
  s.parked = false;
  if (!s.shut) {
    unlink_locked(slot);
  }
  expired = s.expired;
  return s.connection.get();
}

bool ConnectionWorkers::park(int slot) {
  MutexLock lock(mu_);
  if (stopping_) {
    return false;
  }
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  park_locked(slot, parked_again_for_);
  // Re-armed under the lock: the thread that takes its event (take() locks
  // too) then closes `fd` only after this call is over. Parking happens only
  // after park_after without a request, so the lock is not held per request.
  if (watch(epoll_.get(), EPOLL_CTL_MOD, s.connection->fd(), kConnectionEvents,
            connection_key(slot, s.generation))) {
    return true;
  }
  logger("http")->error("cannot park a connection: {}", errno_text(errno));
  unpark_locked(slot);
  return false;
}

std::unique_ptr<ClientConnection> ConnectionWorkers::free_slot_locked(int slot) {
  unpark_locked(slot);
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  auto connection = std::move(s.connection);
  ++s.generation;
  s.shut = false;
  s.expired = false;
  free_slots_.push_back(slot);
  --live_;
  return connection;
}

void ConnectionWorkers::forget(int slot) {
  std::unique_ptr<ClientConnection> gone;
  bool last = false;
  {
    MutexLock lock(mu_);
    gone = free_slot_locked(slot);
    last = stopping_ && live_ == 0;
  }
  gone.reset();  // closes it, if serving did not
  if (last) {
    rearm_stop();
  }
}

void ConnectionWorkers::on_deadline() {
  std::uint64_t expirations = 0;
  if (::read(timer_.get(), &expirations, sizeof expirations) < 0) {
    // EAGAIN: set again meanwhile; the list says what is due.
  }
  {
    MutexLock lock(mu_);
    const auto now = Clock::now();
    while (oldest_ >= 0 && slots_[static_cast<std::size_t>(oldest_)].deadline <= now) {
      slots_[static_cast<std::size_t>(oldest_)].expired = true;
      shut_locked(oldest_);
    }
    timer_armed_ = oldest_ >= 0;
    if (timer_armed_) {
      timer_at_ = slots_[static_cast<std::size_t>(oldest_)].deadline;
      arm_timer(timer_.get(), timer_at_);
    }
  }
  if (!watch(epoll_.get(), EPOLL_CTL_MOD, timer_.get(), EPOLLIN | EPOLLONESHOT, kDeadlineKey)) {
    logger("http")->error("cannot watch the keep-alive timer: {}", errno_text(errno));
  }
}

bool ConnectionWorkers::on_stop() {
  MutexLock lock(mu_);
  if (live_ == 0) {
    return true;
  }
  // The last connection to close re-arms the stop event (forget()).
  while (oldest_ >= 0) {
    shut_locked(oldest_);
  }
  return false;
}

void ConnectionWorkers::rearm_stop() {
  // The eventfd stays readable: re-arming wakes one more waiting thread,
  // which does the same before it exits.
  if (!watch(epoll_.get(), EPOLL_CTL_MOD, stop_event_.get(), EPOLLIN | EPOLLONESHOT, kStopKey)) {
    logger("http")->error("cannot pass the stop on to the next connection thread: {}",
                          errno_text(errno));
  }
}

void ConnectionWorkers::worker() {
  bool counted = true;  // the thread that started this one counted it as waiting
  for (;;) {
    if (!counted) {
      waiting_.fetch_add(1, std::memory_order_relaxed);
    }
    counted = false;
    epoll_event ev{};
    const int n = ::epoll_wait(epoll_.get(), &ev, 1,
                               static_cast<int>(std::chrono::milliseconds(kIdleExit).count()));
    const int still_waiting = waiting_.fetch_sub(1, std::memory_order_relaxed) - 1;
    if (n < 0) {
      if (errno != EINTR) {
        logger("http")->error("epoll_wait failed: {}", errno_text(errno));
      }
      continue;
    }
    if (n == 0) {
      // Idle for kIdleExit: leave if enough others wait.
      MutexLock lock(mu_);
      if (!stopping_ && still_waiting >= std::max(1, spare_threads_)) {
        break;
      }
      continue;
    }
    if (ev.data.u64 == kStopKey) {
      if (on_stop()) {
        rearm_stop();
        break;
      }
      continue;
    }
    if (ev.data.u64 == kDeadlineKey) {
      on_deadline();
      continue;
    }
    int slot = -1;
    bool expired = false;
    ClientConnection* connection = take(ev.data.u64, slot, expired);
    if (connection == nullptr) {
      continue;
    }
    if (expired) {
      // Its keep-alive deadline passed first: closed without reading what
      // may have arrived since, as if that had come a moment later (never
      // run, never answered: safe for the client to send again).
      forget(slot);
      continue;
    }
    if (still_waiting == 0) {
      ensure_waiter();
    }
    try {
      auto after = connection->serve(/*may_park=*/true);
      if (after == ClientConnection::After::kPark && !park(slot)) {
        after = connection->serve(/*may_park=*/false);  // stopping: served to its end now
      }
      if (after == ClientConnection::After::kClosed) {
        forget(slot);
      }
    } catch (const std::exception& e) {
      logger("http")->error("connection thread: {}", e.what());
      forget(slot);
    } catch (...) {
      logger("http")->error("connection thread: unknown exception");
      forget(slot);
    }
  }
  MutexLock lock(mu_);
  --threads_;
  exited_.push_back(pthread_self());
  exit_cv_.notify_all();
}

void ConnectionWorkers::shutdown() {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  std::uint64_t one = 1;
  if (!stop_event_.valid() || ::write(stop_event_.get(), &one, sizeof one) < 0) {
    logger("http")->error("cannot signal the connection workers to stop: {}", errno_text(errno));
  }
}

void ConnectionWorkers::join_all() {
  {
    MutexLock lock(mu_);
    exit_cv_.wait(lock, [this]() LEMON_REQUIRES(mu_) { return threads_ == 0; });
  }
  reap();
}

void ConnectionWorkers::reap() {
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
