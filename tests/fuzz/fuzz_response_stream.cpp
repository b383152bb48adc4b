// Fuzz target: reading a backend's response, as the upstream client does —
// the status line and fields (1xx skipped, at most a few), then the body by
// Content-Length, chunked coding or until close. The input is what the
// "backend" sends; it is written into one end of a socketpair, which is
// then shut, and UpstreamExchange runs on the other end. Any outcome is
// fine as long as nothing crashes, hangs or leaks; a success must have had
// a final (non-1xx) head.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "socket_input.h"
#include "upstream_exchange.h"

using namespace lemon::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 65536) {
    return 0;
  }
  int fds[2];
  if (!socketpair_with_input(data, size, fds)) {
    return 0;
  }
  ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);

  CallOptions options;
  options.idle_timeout = std::chrono::milliseconds(200);
  options.total_timeout = std::chrono::milliseconds(1000);
  UpstreamRequest request;
  request.path = "/v1/chat/completions";
  request.content_type = "application/json";
  request.body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
  const std::string endpoint = "127.0.0.1:8001";
  const std::string authorization = "Bearer fuzz";
  int final_status = 0;
  std::size_t body_bytes = 0;
  {
    detail::UpstreamExchange exchange(fds[1], endpoint, authorization, options,
                                      detail::Clock::now() + std::chrono::seconds(2));
    detail::ExchangeOutcome out = exchange.run(
        request,
        [&](const UpstreamHead& head) {
          final_status = head.status;
          return true;
        },
        [&](std::string_view piece) {
          body_bytes += piece.size();
          return true;
        });
    if (out.status.ok() && (final_status < 200 || final_status > 999)) {
      std::abort();
    }
    if (body_bytes > size) {
      std::abort();  // the body cannot be larger than what was sent
    }
  }
  ::close(fds[0]);
  ::close(fds[1]);
  return 0;
}
