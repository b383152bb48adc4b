#include "lemon/net/upstream_client.h"
#include "lemon/core/mutex.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <optional>
#include <vector>

#include "io.h"
#include "lemon/core/log.h"
#include "upstream_exchange.h"

namespace lemon::net {
namespace {

using detail::Clock;
using detail::UniqueFd;

// An idle pooled connection is usable only if nothing arrived on it: a
// readable or hung-up idle connection was closed by the backend (or carries
// garbage).
bool idle_connection_alive(int fd) {
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  int rc = ::poll(&p, 1, 0);
  return rc == 0;
}

}  // namespace

bool watched_client_gone(short revents, short& watch_events, const CallOptions& options) {
  if ((revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
    return true;
  }
  if ((revents & POLLRDHUP) == 0 || watch_events == 0) {
    return false;
  }
  if (options.on_client_half_close && options.on_client_half_close()) {
    watch_events = 0;
    return false;
  }
  return true;
}

class UpstreamClient::Impl {
 public:
  Impl(std::string host, int port, std::size_t max_idle, std::string authorization)
      : host_(std::move(host)),
        port_(port),
        max_idle_(max_idle),
        authorization_(std::move(authorization)),
        endpoint_((host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_) + ":" +
                  std::to_string(port_)) {}

  ~Impl() { close_idle(); }

  Status call(const UpstreamRequest& request, const CallOptions& options,
              const std::function<bool(const UpstreamHead&)>& on_head,
              const std::function<bool(std::string_view)>& on_data, bool pooled,
              std::optional<Clock::time_point> deadline);

  void close_idle() {
    std::vector<IdleConnection> closing;
    MutexLock lock(mu_);
    closing.swap(idle_);
  }

  const std::string host_;
  const int port_;
  const std::size_t max_idle_;
  const std::string authorization_;  // never logged
  const std::string endpoint_;

 private:
  Result<UniqueFd> connect(const CallOptions& options,
                           std::optional<Clock::time_point> deadline) const;
  Status connect_one(const addrinfo& ai, const CallOptions& options, Clock::time_point deadline,
                     std::chrono::milliseconds budget, UniqueFd& out) const;
  UniqueFd take_idle();
  void give_back(UniqueFd fd);

  struct IdleConnection {
    UniqueFd fd;
    Clock::time_point since;  // when it went back to the pool
  };
  Mutex mu_;
  std::vector<IdleConnection> idle_ LEMON_GUARDED_BY(mu_);  // most recently used last
};

// A connection back in the pool for less than this is reused without the
// liveness check: backends close idle connections after seconds (llama.cpp's
// keep-alive is 5 s), and one that closed it sooner anyway (it died) fails
// the exchange before any answer, which is then retried once on a fresh
// connection (call()). Saves a poll(2) per request under load.
constexpr std::chrono::milliseconds kTrustedIdle{500};

UniqueFd UpstreamClient::Impl::take_idle() {
  for (;;) {
    IdleConnection idle;
    {
      MutexLock lock(mu_);
      if (idle_.empty()) {
        return UniqueFd();
      }
      idle = std::move(idle_.back());
      idle_.pop_back();
    }
    // The liveness check (poll) and the close of a dead connection are
    // system calls: never under the lock every other request to this
    // backend takes (it was the router's most contended lock
    // at c=16).
    if (Clock::now() - idle.since < kTrustedIdle || idle_connection_alive(idle.fd.get())) {
      return std::move(idle.fd);
    }
  }
}

void UpstreamClient::Impl::give_back(UniqueFd fd) {
  const auto now = Clock::now();
  MutexLock lock(mu_);
  if (idle_.size() < max_idle_) {
    idle_.push_back({std::move(fd), now});
  }
}

Status UpstreamClient::Impl::connect_one(const addrinfo& ai, const CallOptions& options,
                                         Clock::time_point deadline,
                                         std::chrono::milliseconds budget, UniqueFd& out) const {
  const std::string prefix = "cannot connect to backend " + endpoint_ + ": ";
  UniqueFd fd(::socket(ai.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return Error(ErrorCode::kBackendUnavailable, prefix + detail::errno_text(errno));
  }
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) {
      return Error(ErrorCode::kBackendUnavailable, prefix + detail::errno_text(errno));
    }
    short watch_events = POLLRDHUP;
    for (;;) {
      auto w = detail::wait_fd(fd.get(), POLLOUT, detail::millis_until(deadline), options.watch_fd,
                               watch_events);
      if (w == detail::Wait::kInterrupted) {
        pollfd client{options.watch_fd, watch_events, 0};
        ::poll(&client, 1, 0);
        if (!detail::watched_client_gone(client.revents, watch_events, options)) {
          continue;  // a half-closed client that may still be answered
        }
        return Error(ErrorCode::kCancelled, "client disconnected");
      }
      if (w == detail::Wait::kTimeout) {
        return Error(ErrorCode::kBackendUnavailable,
                     prefix + "timed out after " + std::to_string(budget.count()) + " ms");
      }
      if (w == detail::Wait::kError) {
        return Error(ErrorCode::kBackendUnavailable, prefix + detail::errno_text(errno));
      }
      break;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
      err = errno;
    }
    if (err != 0) {
      return Error(ErrorCode::kBackendUnavailable, prefix + detail::errno_text(err));
    }
  }
  detail::set_nodelay(fd.get());
  out = std::move(fd);
  return ok_status();
}

Result<UniqueFd> UpstreamClient::Impl::connect(const CallOptions& options,
                                               std::optional<Clock::time_point> deadline) const {
  auto budget = options.connect_timeout;
  auto connect_deadline = Clock::now() + budget;
  if (deadline && *deadline < connect_deadline) {
    connect_deadline = *deadline;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port_);
  int rc = ::getaddrinfo(host_.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    return Error(ErrorCode::kBackendUnavailable,
                 "cannot connect to backend " + endpoint_ + ": " + ::gai_strerror(rc));
  }
  std::optional<Error> last;
  UniqueFd fd;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    auto status = connect_one(*ai, options, connect_deadline, budget, fd);
    if (status.ok()) {
      break;
    }
    last = std::move(status).error();
    if (last->code() == ErrorCode::kCancelled) {
      break;
    }
  }
  ::freeaddrinfo(found);
  if (fd.valid()) {
    return fd;
  }
  if (last) {
    return std::move(*last);
  }
  return Error(ErrorCode::kBackendUnavailable,
               "cannot connect to backend " + endpoint_ + ": no address");
}

Status UpstreamClient::Impl::call(const UpstreamRequest& request, const CallOptions& options,
                                  const std::function<bool(const UpstreamHead&)>& on_head,
                                  const std::function<bool(std::string_view)>& on_data, bool pooled,
                                  std::optional<Clock::time_point> deadline) {
  for (int attempt = 0;; ++attempt) {
    UniqueFd fd;
    if (pooled && attempt == 0) {
      fd = take_idle();
    }
    const bool reused = fd.valid();
    if (!reused) {
      auto connected = connect(options, deadline);
      if (!connected.ok()) {
        return std::move(connected).error();
      }
      fd = std::move(*connected);
    }
    detail::UpstreamExchange exchange(fd.get(), endpoint_, authorization_, options, deadline);
    auto outcome = exchange.run(request, on_head, on_data);
    if (outcome.status.ok()) {
      if (pooled && outcome.reusable) {
        give_back(std::move(fd));
      }
      return ok_status();
    }
    if (reused && outcome.retryable && attempt == 0) {
      // The backend closed the idle connection as we reused it; it never saw
      // the request, so one retry on a fresh connection is safe.
      logger("http")->debug("pooled connection to {} was stale ({}); retrying", endpoint_,
                            outcome.status.error().message());
      continue;
    }
    if (outcome.reset) {
      // The backend reset the connection before one byte of a response (a
      // listener going away as it restarts). Typed as unreachable, like a
      // refused connect, so callers may try again. An
      // orderly close without an answer stays kBackendCrashed: a backend
      // that died holding the request is not sent it again.
      return Error(ErrorCode::kBackendUnavailable, outcome.status.error().message());
    }
    return std::move(outcome.status);
  }
}

UpstreamClient::UpstreamClient(std::string host, int port, std::size_t max_idle_connections,
                               const std::string& bearer_token)
    : impl_(std::make_unique<Impl>(
          std::move(host), port, max_idle_connections,
          bearer_token.empty() ? std::string() : "Bearer " + bearer_token)) {}

UpstreamClient::~UpstreamClient() = default;

const std::string& UpstreamClient::host() const {
  return impl_->host_;
}

int UpstreamClient::port() const {
  return impl_->port_;
}

namespace {

std::optional<Clock::time_point> total_deadline(const CallOptions& options) {
  if (options.total_timeout.count() <= 0) {
    return std::nullopt;
  }
  return Clock::now() + options.total_timeout;
}

}  // namespace

Result<UpstreamResponse> UpstreamCalls::send(const UpstreamRequest& request,
                                             const CallOptions& options) {
  UpstreamResponse response;
  bool too_large = false;
  auto status = stream(
      request, options,
      [&response](const UpstreamHead& head) {
        response.status = head.status;
        response.headers = head.headers;
        return true;
      },
      [&](std::string_view piece) {
        if (piece.size() > options.max_response_bytes - response.body.size()) {
          too_large = true;
          return false;  // the connection is closed, not reused
        }
        response.body.append(piece);
        return true;
      });
  if (too_large) {
    return Error(ErrorCode::kUpstreamProtocol, "the backend's reply exceeds " +
                                                   std::to_string(options.max_response_bytes) +
                                                   " bytes (--max-response-size)");
  }
  if (!status.ok()) {
    return std::move(status).error();
  }
  return response;
}

Status UpstreamClient::stream(const UpstreamRequest& request, const CallOptions& options,
                              const std::function<bool(const UpstreamHead&)>& on_head,
                              const std::function<bool(std::string_view)>& on_data) {
  return impl_->call(request, options, on_head, on_data, true, total_deadline(options));
}

Result<int> UpstreamClient::probe(const std::string& path, std::chrono::milliseconds timeout) {
  UpstreamRequest request;
  request.method = "GET";
  request.path = path;
  CallOptions options;
  options.connect_timeout = timeout;
  int status_code = 0;
  auto status = impl_->call(
      request, options,
      [&status_code](const UpstreamHead& head) {
        status_code = head.status;
        return true;
      },
      [](std::string_view) { return true; }, false, Clock::now() + timeout);
  if (!status.ok()) {
    return std::move(status).error();
  }
  return status_code;
}

void UpstreamClient::close_idle() {
  impl_->close_idle();
}

}  // namespace lemon::net
