// Reads requests off one client connection: the head (414/431 limits, at
// most kMaxLeadingBlankLines blank lines before it, all within
// header_timeout or 408), the HeadCheck's verdict, then the body by
// Content-Length or chunked coding (413 before any of it is read; 100
// Continue sent when the client waits for it; idle and minimum-rate
// deadlines; each byte charged to the shared RequestMemory, 503 past it).
// Bytes past one request stay buffered for the next, so pipelined requests
// are answered in order.
//
// Internal to src/net. Thread-safety: owned by the connection thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "io.h"
#include "lemon/core/error.h"
#include "lemon/net/message.h"
#include "lemon/net/server.h"

namespace lemon::net::detail {

// Bytes of request bodies held across all connections (ServerOptions::
// max_request_memory). Lock-free; shared by every connection of a server.
class RequestMemory {
 public:
  explicit RequestMemory(std::size_t limit) : limit_(limit) {}
  // Takes `n` bytes if they fit under the limit.
  bool try_take(std::size_t n);
  void give_back(std::size_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

struct ReadOutcome {
  enum class Kind {
    kRequest,  // `request` is filled
    kClosed,   // peer closed, idle timeout, stop, or I/O error: just close
    kReject,   // answer `rejection` with the error envelope, then close
    kAnswer,   // answer `answer` (the HeadCheck's), then close unread
  };
  Kind kind = Kind::kClosed;
  // kRequest:
  bool keep_alive = true;
  bool http10 = false;
  bool head_request = false;
  // kReject: what to answer with (its status, envelope and Retry-After).
  std::optional<Error> rejection;
  // kAnswer:
  EarlyAnswer answer;
};

class RequestReader {
 public:
  // `memory` is shared by every connection; `stop_fd` ends every wait.
  RequestReader(int fd, const ServerOptions& options, RequestMemory& memory, int stop_fd);
  ~RequestReader();  // gives the last body's bytes back
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Reads the next request. The previous request's body must be done with:
  // its bytes are given back to `memory` here.
  ReadOutcome read(Request& request);

  // Bytes of a next request already received (a pipelined request).
  bool has_buffered_bytes() const { return !buf_.empty(); }
  // Those bytes, taken away (a connection upgraded to a WebSocket).
  std::string take_buffered() { return std::exchange(buf_, std::string()); }
  // The last request's body is done with: its bytes go back to `memory` now
  // rather than at the next read (a connection about to be parked).
  void done_with_body() {
    memory_.give_back(charged_);
    charged_ = 0;
  }

 private:
  enum class Fill { kData, kEof, kTimeout, kStopped };

  // Appends what the socket has to buf_, waiting until `deadline` (or the
  // server's stop, when `stoppable`). With `try_first` it reads before it
  // polls: the socket was reported readable (a parked connection handed
  // over), so the poll would only cost a system call.
  Fill fill(Clock::time_point deadline, bool stoppable, bool try_first = false);
  // Appends `data` to the body if `memory_` has room for it.
  bool charge_and_append(Request& request, std::string_view data);
  // When the body must have its next byte by: the idle and rate deadlines.
  Clock::time_point body_deadline(std::size_t received) const;
  ReadOutcome read_length(Request& request, std::uint64_t length, ReadOutcome& out);
  ReadOutcome read_chunked(Request& request, ReadOutcome& out);

  int fd_;
  const ServerOptions& options_;
  RequestMemory& memory_;
  int stop_fd_;
  std::string buf_;          // received, not yet consumed
  std::size_t charged_ = 0;  // body bytes taken from memory_
  Clock::time_point body_start_;
  Clock::time_point last_progress_;
};

}  // namespace lemon::net::detail
