// Fuzz target: the SSE scanner that watches forwarded streams. The input is
// fed whole to one scanner and in pieces (cut at offsets from its first
// byte) to another; both must agree on [DONE], the count of data events, the
// boundary state and the last usage event.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lemon/inference/sse_scanner.h"

using lemon::inference::SseScanner;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  const std::size_t step = 1 + data[0] % 32;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto t0 = SseScanner::Clock::now();
  SseScanner whole(t0, 64);
  whole.feed(in, t0);
  SseScanner split(t0, 64);
  for (std::size_t at = 0; at < in.size(); at += step) {
    split.feed(in.substr(at, step), t0);
  }
  if (whole.saw_done() != split.saw_done() || whole.data_events() != split.data_events() ||
      whole.at_boundary() != split.at_boundary() || whole.last_usage() != split.last_usage() ||
      whole.gaps().size() > 64) {
    std::abort();
  }
  (void)whole.first_event_latency();
  (void)whole.generation_seconds();
  return 0;
}
