#include "io.h"

#include "lemon/core/error.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>

namespace lemon::net::detail {

Wait wait_fd(int fd, short events, int timeout_ms, int extra_fd, short extra_events) {
  std::array<pollfd, 2> fds{};
  fds[0].fd = fd;
  fds[0].events = events;
  fds[1].fd = extra_fd;
  fds[1].events = extra_events;
  const nfds_t count = extra_fd >= 0 ? 2 : 1;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int rc = ::poll(fds.data(), count, timeout_ms);
    if (rc > 0) {
      if (count == 2 && fds[1].revents != 0) {
        return Wait::kInterrupted;
      }
      return Wait::kReady;
    }
    if (rc == 0) {
      return Wait::kTimeout;
    }
    if (errno != EINTR) {
      return Wait::kError;
    }
    if (timeout_ms >= 0) {
      timeout_ms = millis_until(deadline);
    }
  }
}

int millis_until(Clock::time_point deadline) {
  auto now = Clock::now();
  if (deadline <= now) {
    return 0;
  }
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
  long long ms = (us + 999) / 1000;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

long send_once(int fd, const iovec* iov, int count) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<std::size_t>(count);
  for (;;) {
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      return static_cast<long>(n);
    }
    if (errno != EINTR) {
      return -errno;
    }
  }
}

int advance_iov(iovec* iov, int count, int start, std::size_t n) {
  while (start < count && n > 0) {
    if (n >= iov[start].iov_len) {
      n -= iov[start].iov_len;
      iov[start].iov_len = 0;
      ++start;
    } else {
      iov[start].iov_base = static_cast<char*>(iov[start].iov_base) + n;
      iov[start].iov_len -= n;
      n = 0;
    }
  }
  while (start < count && iov[start].iov_len == 0) {
    ++start;
  }
  return start;
}

namespace {

// Writes every byte, waiting for POLLOUT with the timeout `wait_ms()` gives
// before each wait (0: give up with ETIMEDOUT).
template <typename WaitMs>
int send_every_byte(int fd, iovec* iov, int count, WaitMs wait_ms) {
  int start = advance_iov(iov, count, 0, 0);
  while (start < count) {
    long n = send_once(fd, iov + start, count - start);
    if (n >= 0) {
      start = advance_iov(iov, count, start, static_cast<std::size_t>(n));
      continue;
    }
    if (n != -EAGAIN && n != -EWOULDBLOCK) {
      return static_cast<int>(-n);
    }
    const int timeout = wait_ms();
    if (timeout == 0) {
      return ETIMEDOUT;
    }
    Wait w = wait_fd(fd, POLLOUT, timeout);
    if (w == Wait::kTimeout) {
      return ETIMEDOUT;
    }
    if (w == Wait::kError) {
      return errno != 0 ? errno : EIO;
    }
  }
  return 0;
}

}  // namespace

int send_all(int fd, iovec* iov, int count, Clock::time_point deadline) {
  return send_every_byte(fd, iov, count, [deadline] { return millis_until(deadline); });
}

int send_all_progressing(int fd, iovec* iov, int count, std::chrono::milliseconds idle) {
  // Each wait has `idle` from its start: any accepted byte renews it.
  return send_every_byte(fd, iov, count,
                         [idle] { return std::max(1, millis_until(Clock::now() + idle)); });
}

int send_all(int fd, std::string_view data, Clock::time_point deadline) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  return send_all(fd, &iov, 1, deadline);
}

std::string errno_text(int err) {
  return errno_message(err);
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void lingering_close(UniqueFd& fd, std::chrono::milliseconds linger, int stop_fd) {
  if (!fd.valid()) {
    return;
  }
  ::shutdown(fd.get(), SHUT_WR);
  const auto deadline = Clock::now() + linger;
  char sink[16384];
  for (;;) {
    ssize_t n = ::recv(fd.get(), sink, sizeof sink, MSG_DONTWAIT);
    if (n > 0) {
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      break;
    }
    int timeout = millis_until(deadline);
    if (timeout == 0 || wait_fd(fd.get(), POLLIN, timeout, stop_fd, POLLIN) != Wait::kReady) {
      break;
    }
  }
  fd.reset();
}

}  // namespace lemon::net::detail
