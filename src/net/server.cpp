#include "lemon/net/server.h"
#include "lemon/core/mutex.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "connection.h"
#include "connection_workers.h"
#include "io.h"
#include "lemon/core/log.h"
#include "websocket_loop.h"

namespace lemon::net {
namespace {

using detail::UniqueFd;

std::string address_text(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = "";
  if (sa->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  } else if (sa->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
  }
  return text;
}

std::string endpoint_text(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

// Creates a listening socket bound to `addr`; on failure returns -1 and sets
// `err`.
int listen_on(const sockaddr* addr, socklen_t len, int& err) {
  UniqueFd fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) {
    err = errno;
    return -1;
  }
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (addr->sa_family == AF_INET6) {
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
  if (::bind(fd.get(), addr, len) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
    err = errno;
    return -1;
  }
  return fd.release();
}

// Connection threads beyond max_connections for evicted connections that
// have not finished closing yet.
constexpr int kEvictionSlack = 64;

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return -1;
  }
  if (ss.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, Handler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
        memory_(options_.max_request_memory),
        registry_({options_.max_connections, options_.max_connections_per_client}),
        websockets_(options_.websocket),
        // Room for connections closed to make room but not yet gone.
        workers_(options_.max_connections + kEvictionSlack, options_.spare_threads,
                 options_.thread_stack_bytes, options_.keep_alive_timeout, options_.park_after) {
    context_.options = &options_;
    context_.handler = &handler_;
    context_.stop_fd = stop_fd_.get();
    context_.stopping = &stopping_;
    context_.memory = &memory_;
    context_.websockets = &websockets_;
  }

  ~Impl() {
    stop();
    MutexLock lock(mu_);
    run_cv_.wait(lock, [this]() LEMON_REQUIRES(mu_) { return !running_; });
    lock.unlock();
    workers_.shutdown();
    workers_.join_all();
    websockets_.stop();
    websockets_.join();
  }

  Result<int> bind(const std::string& host, int port);
  void run();
  void stop();
  int open_connections() const { return workers_.open_connections(); }
  int open_websockets() const { return websockets_.open(); }

 private:
  void accept_loop(int listen_fd);
  Status bind_one(const sockaddr* addr, socklen_t len, const std::string& shown);

  ServerOptions options_;
  Handler handler_;
  UniqueFd stop_fd_;
  detail::RequestMemory memory_;
  detail::ConnectionRegistry registry_;
  detail::WebSocketLoop websockets_;  // before workers_: their connections upgrade into it
  std::atomic<bool> stopping_{false};
  detail::ConnectionContext context_;
  std::vector<UniqueFd> listeners_;
  bool bound_ = false;

  Mutex mu_;
  CondVar run_cv_;
  bool running_ LEMON_GUARDED_BY(mu_) = false;

  detail::ConnectionWorkers workers_;  // last: its threads use the members above
};

Status Server::Impl::bind_one(const sockaddr* addr, socklen_t len, const std::string& shown) {
  int err = 0;
  int fd = listen_on(addr, len, err);
  if (fd < 0) {
    return Error(ErrorCode::kInternal,
                 "cannot listen on " + shown + ": " + detail::errno_text(err));
  }
  listeners_.emplace_back(fd);
  return ok_status();
}

Result<int> Server::Impl::bind(const std::string& host, int port) {
  if (bound_) {
    return Error(ErrorCode::kInternal, "server is already bound");
  }
  if (port < 0 || port > 65535) {
    return Error(ErrorCode::kInvalidOption, "invalid port " + std::to_string(port));
  }
  std::vector<std::string> hosts;
  if (host == "localhost") {
    hosts = {"127.0.0.1", "::1"};
  } else {
    hosts = {host};
  }
  int bound = port;
  std::string first_error;
  for (const auto& name : hosts) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(bound);
    int rc = ::getaddrinfo(name.c_str(), service.c_str(), &hints, &found);
    if (rc != 0) {
      if (first_error.empty()) {
        first_error = "cannot resolve " + name + ": " + ::gai_strerror(rc);
      }
      continue;
    }
    for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
      if (bound != 0 && bound != port) {
        // Later addresses use the port the first socket got.
        if (ai->ai_family == AF_INET) {
          reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_port = htons(bound);
        } else if (ai->ai_family == AF_INET6) {
          reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_port = htons(bound);
        }
      }
      const std::string shown = endpoint_text(address_text(ai->ai_addr), bound);
      auto status = bind_one(ai->ai_addr, ai->ai_addrlen, shown);
      if (!status.ok()) {
        if (first_error.empty()) {
          first_error = status.error().message();
        }
        continue;
      }
      if (bound == 0) {
        bound = bound_port(listeners_.back().get());
      }
    }
    ::freeaddrinfo(found);
  }
  if (listeners_.empty()) {
    return Error(ErrorCode::kInternal,
                 first_error.empty() ? "cannot listen on " + host : first_error);
  }
  bound_ = true;
  for (const auto& fd : listeners_) {
    logger("http")->debug("listening on fd {} port {}", fd.get(), bound);
  }
  return bound;
}

void Server::Impl::accept_loop(int listen_fd) {
  auto log = logger("http");
  while (!stopping_.load()) {
    auto w = detail::wait_fd(listen_fd, POLLIN, -1, stop_fd_.get(), POLLIN);
    if (w == detail::Wait::kInterrupted) {
      break;
    }
    if (w == detail::Wait::kError) {
      log->error("poll on listening socket failed: {}", detail::errno_text(errno));
      break;
    }
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
      if (fd < 0) {
        int err = errno;
        if (err == EINTR || err == ECONNABORTED || err == EPROTO) {
          continue;
        }
        if (err != EAGAIN && err != EWOULDBLOCK) {
          // EMFILE and friends: back off instead of spinning.
          log->warn("accept failed: {}", detail::errno_text(err));
          detail::wait_fd(stop_fd_.get(), POLLIN, 100);
        }
        break;
      }
      if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
        detail::set_nodelay(fd);
      }
      detail::PendingConnection pending{fd, address_text(reinterpret_cast<sockaddr*>(&ss))};
      // At a limit, the longest-idle connection (of this address, or of
      // any) is closed to make room; with none idle, this one is refused.
      auto id = registry_.admit(fd, pending.remote_addr);
      if (!id) {
        log->warn("rejecting connection from {}: {} connections open, none idle",
                  pending.remote_addr, registry_.open());
        detail::reject_busy(fd);
        continue;
      }
      pending.registry = &registry_;
      pending.registry_id = *id;
      auto connection = std::make_unique<detail::ClientConnection>(std::move(pending), context_);
      if (workers_.submit(connection) != detail::ConnectionWorkers::Admit::kAccepted) {
        log->warn("rejecting connection from {}: {} connections open",
                  connection->pending().remote_addr, workers_.open_connections());
        connection->refuse_busy();
      }
    }
  }
}

void Server::Impl::run() {
  {
    MutexLock lock(mu_);
    if (running_) {
      logger("http")->error("Server::run() called twice");
      return;
    }
    running_ = true;
  }
  std::vector<std::thread> acceptors;
  acceptors.reserve(listeners_.size());
  for (auto& fd : listeners_) {
    acceptors.emplace_back([this, listen_fd = fd.get()] { accept_loop(listen_fd); });
  }
  for (auto& t : acceptors) {
    t.join();
  }
  listeners_.clear();  // closes the listening sockets
  workers_.shutdown();
  workers_.join_all();
  // No connection is left to upgrade: the WebSockets end (their close
  // handshakes bounded) and their thread with them.
  websockets_.stop();
  websockets_.join();
  MutexLock lock(mu_);
  running_ = false;
  run_cv_.notify_all();
}

void Server::Impl::stop() {
  if (stopping_.exchange(true)) {
    return;
  }
  std::uint64_t one = 1;
  if (::write(stop_fd_.get(), &one, sizeof one) < 0) {
    logger("http")->error("cannot signal server stop: {}", detail::errno_text(errno));
  }
  workers_.shutdown();
  websockets_.stop();
}

Server::Server(ServerOptions options, Handler handler) {
  // Writes use MSG_NOSIGNAL; this also covers anything else writing to a
  // closed socket or pipe in the process.
  std::signal(SIGPIPE, SIG_IGN);
  impl_ = std::make_unique<Impl>(std::move(options), std::move(handler));
}

Server::~Server() = default;

Result<int> Server::bind(const std::string& host, int port) {
  return impl_->bind(host, port);
}

void Server::run() {
  impl_->run();
}

void Server::stop() {
  impl_->stop();
}

int Server::open_connections() const {
  return impl_->open_connections();
}

int Server::open_websockets() const {
  return impl_->open_websockets();
}

}  // namespace lemon::net
