#include "websocket_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "lemon/core/log.h"

namespace lemon::net::detail {
namespace {

constexpr std::uint64_t kEventKey = 0;  // connection ids start at 1
// How long the sockets have, once the server stops, to answer our close.
constexpr std::chrono::milliseconds kStopGrace{2000};

}  // namespace

WebSocketLoop::WebSocketLoop(WebSocketOptions options)
    : options_(options),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kEventKey;
  if (!epoll_.valid() || !event_.valid() ||
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, event_.get(), &ev) != 0) {
    logger("http")->error("cannot set up the WebSocket loop: {}", errno_text(errno));
    MutexLock lock(mu_);
    stopping_ = true;  // reserve() refuses every socket
  }
}

WebSocketLoop::~WebSocketLoop() {
  stop();
  join();
}

bool WebSocketLoop::reserve(const std::string& address) {
  MutexLock lock(mu_);
  if (stopping_ || open_ >= options_.max_sockets) {
    return false;
  }
  int& mine = per_address_[address];
  if (mine >= options_.max_sockets_per_client) {
    if (mine == 0) {
      per_address_.erase(address);
    }
    return false;
  }
  ++mine;
  ++open_;
  return true;
}

void WebSocketLoop::unreserve(const std::string& address) {
  MutexLock lock(mu_);
  --open_;
  if (auto it = per_address_.find(address); it != per_address_.end() && --it->second <= 0) {
    per_address_.erase(it);
  }
}

void WebSocketLoop::adopt(int fd, std::string remote_addr, std::string already_read,
                          std::shared_ptr<WebSocketHandler> handler, std::size_t max_message) {
  {
    MutexLock lock(mu_);
    if (!exited_) {
      adoptions_.push_back(
          {fd, std::move(remote_addr), std::move(already_read), std::move(handler), max_message});
      if (!started_) {
        started_ = true;
        thread_ = std::thread([this] { run(); });
      }
      if (!signalled_) {
        signalled_ = true;
        signal();
      }
      return;
    }
  }
  // The loop has ended (the server stopped): nobody will serve it.
  UniqueFd closing(fd);
  unreserve(remote_addr);
}

void WebSocketLoop::stop() {
  MutexLock lock(mu_);
  if (stopping_) {
    return;
  }
  stopping_ = true;
  if (started_) {
    signalled_ = true;
    signal();
  }
}

void WebSocketLoop::join() {
  if (thread_.joinable()) {
    thread_.join();
  }
}

int WebSocketLoop::open() const {
  MutexLock lock(mu_);
  return open_;
}

void WebSocketLoop::schedule(std::uint64_t id) {
  // Called from any thread, also from inside a log sink: no logging here.
  MutexLock lock(mu_);
  scheduled_.push_back(id);
  if (!signalled_) {
    signalled_ = true;
    signal();
  }
}

void WebSocketLoop::signal() {
  std::uint64_t one = 1;
  [[maybe_unused]] auto written = ::write(event_.get(), &one, sizeof one);
}

void WebSocketLoop::watch(WebSocketConnection& c, bool want_write) {
  auto it = sockets_.find(c.id());
  if (it == sockets_.end() || it->second.want_write == want_write) {
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u);
  ev.data.u64 = c.id();
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd(), &ev) == 0) {
    it->second.want_write = want_write;
  }
}

void WebSocketLoop::service(const std::shared_ptr<WebSocketConnection>& c, Clock::time_point now) {
  const bool blocked = c->flush(now);
  if (c->finished()) {
    end(c->id());
    return;
  }
  c->refresh_timer();
  watch(*c, blocked);
}

void WebSocketLoop::end(std::uint64_t id) {
  auto it = sockets_.find(id);
  if (it == sockets_.end()) {
    return;
  }
  auto c = std::move(it->second.connection);
  sockets_.erase(it);
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c->fd(), nullptr);
  // Its place is free before on_closed() runs: whoever learns of the close
  // from the handler finds the place free.
  unreserve(c->remote_addr());
  c->end();
}

void WebSocketLoop::take_adoptions(Clock::time_point now) {
  std::vector<Adoption> adoptions;
  std::vector<std::uint64_t> scheduled;
  bool stopping = false;
  {
    MutexLock lock(mu_);
    std::uint64_t count = 0;
    [[maybe_unused]] auto got = ::read(event_.get(), &count, sizeof count);
    signalled_ = false;
    adoptions.swap(adoptions_);
    scheduled.swap(scheduled_);
    stopping = stopping_;
  }
  for (auto& a : adoptions) {
    const std::uint64_t id = next_id_++;
    auto c = std::make_shared<WebSocketConnection>(*this, options_, id, a.fd, a.remote_addr,
                                                   std::move(a.handler), a.max_message);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = id;
    sockets_[id] = Entry{c, false};
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, a.fd, &ev) != 0) {
      logger("http")->error("cannot watch a WebSocket: {}", errno_text(errno));
      end(id);
      continue;
    }
    c->open(c, std::move(a.already_read), now);
    if (stopping) {
      c->going_away();
    }
    service(c, now);
  }
  for (std::uint64_t id : scheduled) {
    auto it = sockets_.find(id);
    if (it == sockets_.end()) {
      continue;
    }
    auto c = it->second.connection;
    c->taken_up();
    c->run_wake();
    service(c, now);
  }
}

void WebSocketLoop::run() {
  std::optional<Clock::time_point> stop_by;
  epoll_event events[64];
  for (;;) {
    auto now = Clock::now();
    Clock::time_point next = now + std::chrono::seconds(1);
    for (const auto& [id, entry] : sockets_) {
      next = std::min(next, entry.connection->next_timer());
    }
    if (stop_by) {
      next = std::min(next, *stop_by);
    }
    const int n = ::epoll_wait(epoll_.get(), events, 64, millis_until(next));
    if (n < 0 && errno != EINTR) {
      logger("http")->error("WebSocket loop: epoll_wait failed: {}", errno_text(errno));
    }
    now = Clock::now();
    bool signalled = false;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t key = events[i].data.u64;
      if (key == kEventKey) {
        signalled = true;
        continue;
      }
      auto it = sockets_.find(key);
      if (it == sockets_.end()) {
        continue;
      }
      auto c = it->second.connection;
      if ((events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
        c->read(now);
      }
      service(c, now);
    }
    if (signalled) {
      take_adoptions(now);
      MutexLock lock(mu_);
      if (stopping_ && !stop_by) {
        stop_by = now + std::min(kStopGrace, options_.close_timeout);
        lock.unlock();
        std::vector<std::shared_ptr<WebSocketConnection>> all;
        for (const auto& [id, entry] : sockets_) {
          all.push_back(entry.connection);
        }
        for (const auto& c : all) {
          c->going_away();
          service(c, now);
        }
      }
    }
    std::vector<std::shared_ptr<WebSocketConnection>> due;
    for (const auto& [id, entry] : sockets_) {
      if (entry.connection->next_timer() <= now) {
        due.push_back(entry.connection);
      }
    }
    for (const auto& c : due) {
      c->tick(now);
      service(c, now);
    }
    if (stop_by && (sockets_.empty() || now >= *stop_by)) {
      std::vector<std::uint64_t> ids;
      for (const auto& [id, entry] : sockets_) {
        ids.push_back(id);
      }
      for (std::uint64_t id : ids) {
        end(id);
      }
      MutexLock lock(mu_);
      if (adoptions_.empty()) {
        exited_ = true;  // adopt() closes what comes later itself
        return;
      }
    }
  }
}

}  // namespace lemon::net::detail
