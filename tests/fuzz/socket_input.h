// For the fuzz targets that read from a socket: puts the whole input into one
// end of a socketpair and shuts that end, so the reader sees exactly the
// input and then end-of-file. Inputs are capped by the callers at 64 KiB,
// which the enlarged buffers hold without blocking.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

// fds[0]: the written and shut end; fds[1]: the end to read. False if no
// socketpair could be made.
inline bool socketpair_with_input(const std::uint8_t* data, std::size_t size, int fds[2]) {
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return false;
  }
  int buf = 1 << 18;
  ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  ::setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  std::size_t sent = 0;
  while (sent < size) {
    ssize_t n = ::send(fds[0], data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) {
      break;
    }
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fds[0], SHUT_WR);
  return true;
}
