// Fuzz target: reading requests off a connection, as the server does — the
// head, the HeadCheck, the body by Content-Length or chunked coding, and
// pipelined requests one after another. The input is written into one end
// of a socketpair, which is then shut, and RequestReader reads the other end
// until it stops returning requests. Checks: bodies within max_body_bytes,
// every request with a method and a target, every body byte given back to
// the shared RequestMemory at the end.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lemon/core/error_envelope.h"
#include "request_reader.h"
#include "socket_input.h"

using namespace lemon::net;

namespace {

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

ServerOptions options() {
  ServerOptions o;
  o.max_body_bytes = 4096;
  o.max_header_bytes = 8192;
  o.max_request_memory = 1 << 20;
  // The peer is shut before reading starts: no wait is ever long.
  o.header_timeout = std::chrono::milliseconds(200);
  o.body_idle_timeout = std::chrono::milliseconds(200);
  o.keep_alive_timeout = std::chrono::milliseconds(200);
  o.write_timeout = std::chrono::milliseconds(200);
  // Refuse one path before its body is read, as the API does for 404s.
  o.head_check = [](const Request& r) -> std::optional<EarlyAnswer> {
    if (r.path == "/refused") {
      EarlyAnswer a;
      a.status = 404;
      return a;
    }
    return std::nullopt;
  };
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 65536) {
    return 0;  // more than a socket buffer would block the writer
  }
  int fds[2];
  if (!socketpair_with_input(data, size, fds)) {
    return 0;
  }

  static const ServerOptions kOptions = options();
  detail::RequestMemory memory(kOptions.max_request_memory);
  {
    detail::RequestReader reader(fds[1], kOptions, memory, -1);
    for (int i = 0; i < 1000; ++i) {
      Request request;
      detail::ReadOutcome out = reader.read(request);
      if (out.kind != detail::ReadOutcome::Kind::kRequest) {
        check(out.kind != detail::ReadOutcome::Kind::kReject ||
              (out.rejection && error_status(*out.rejection) >= 400 &&
               error_status(*out.rejection) < 600));
        break;
      }
      check(!request.method.empty() && !request.target.empty());
      check(request.body.size() <= kOptions.max_body_bytes);
      check(valid_utf8(request.target));
      if (!out.keep_alive) {
        break;
      }
    }
  }
  check(memory.used() == 0);
  ::close(fds[0]);
  ::close(fds[1]);
  return 0;
}
