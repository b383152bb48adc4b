// Socket plumbing shared by the server and the upstream client: an owning fd,
// poll()-based waits with a deadline and a second "interrupt" fd, and
// gathered writes that survive partial writes, EINTR and full send buffers
// without ever raising SIGPIPE.
//
// Internal to src/net. Thread-safety: free functions; a UniqueFd is owned by
// one thread at a time.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "lemon/core/unique_fd.h"

namespace lemon::net::detail {

using Clock = std::chrono::steady_clock;

using lemon::UniqueFd;

enum class Wait {
  kReady,        // `fd` reported one of `events` (or HUP/ERR)
  kTimeout,      // the deadline passed
  kInterrupted,  // `extra_fd` reported something
  kError,        // poll() failed
};

// Waits for `events` on `fd`, or any of `extra_events` (or HUP/ERR/NVAL) on
// `extra_fd` when it is >= 0. The extra fd is checked first.
Wait wait_fd(int fd, short events, int timeout_ms, int extra_fd = -1, short extra_events = 0);

// Milliseconds from now until `deadline`, rounded up, clamped to [0, INT_MAX].
int millis_until(Clock::time_point deadline);

// One non-blocking gathered send (sendmsg with MSG_NOSIGNAL|MSG_DONTWAIT).
// Returns bytes written, or -errno.
long send_once(int fd, const iovec* iov, int count);

// Drops the first `n` written bytes from an iovec array; returns the new
// start index (count when all written).
int advance_iov(iovec* iov, int count, int start, std::size_t n);

// Writes every byte of `iov[0..count)`, waiting for POLLOUT when the send
// buffer is full, until `deadline`. Returns 0 or an errno value (ETIMEDOUT
// when the deadline passed). `iov` is modified.
int send_all(int fd, iovec* iov, int count, Clock::time_point deadline);
int send_all(int fd, std::string_view data, Clock::time_point deadline);
// The same, failing with ETIMEDOUT only when the peer accepts no byte for
// `idle` (a slow reader that keeps reading is never cut off).
int send_all_progressing(int fd, iovec* iov, int count, std::chrono::milliseconds idle);

// strerror() text for an errno value.
std::string errno_text(int err);

void set_nodelay(int fd);

// Closes the write side and discards whatever the peer sends until it closes
// or `linger` passes (or `stop_fd` fires), so an early error response is not
// destroyed by a reset; then closes `fd`.
void lingering_close(UniqueFd& fd, std::chrono::milliseconds linger, int stop_fd);

}  // namespace lemon::net::detail
