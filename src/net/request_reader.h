// Reads requests off one client connection: the head (with the 414/431
// limits), then the body by Content-Length or chunked coding (with the 413
// limit checked before the body is read, and 100 Continue sent when the
// client waits for it). Bytes past one request stay buffered for the next, so
// pipelined requests work.
//
// Internal to src/net. Thread-safety: owned by the connection thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "io.h"
#include "lemon/net/message.h"
#include "lemon/net/server.h"

namespace lemon::net::detail {

struct ReadOutcome {
  enum class Kind {
    kRequest,  // `request` is filled
    kClosed,   // peer closed, idle timeout, stop, or I/O error: just close
    kReject,   // answer `status` with the error envelope, then close
  };
  Kind kind = Kind::kClosed;
  // kRequest:
  bool keep_alive = true;
  bool http10 = false;
  bool head_request = false;
  // kReject:
  int status = 0;
  std::string code;
  std::string message;
};

class RequestReader {
 public:
  RequestReader(int fd, const ServerOptions& options, int stop_fd);

  ReadOutcome read(Request& request);

 private:
  enum class Fill { kData, kEof, kStopped };

  // Appends what the socket has to buf_, waiting until `deadline`.
  Fill fill(Clock::time_point deadline);
  ReadOutcome read_length(Request& request, std::uint64_t length, ReadOutcome& out);
  ReadOutcome read_chunked(Request& request, ReadOutcome& out);

  int fd_;
  const ServerOptions& options_;
  int stop_fd_;
  std::string buf_;  // received, not yet consumed
};

}  // namespace lemon::net::detail
