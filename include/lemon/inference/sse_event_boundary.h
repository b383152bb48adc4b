// Where one server-sent event ends: just past the blank line ("\n\n" or
// "\r\n\r\n") that closes it. Shared by the scanners that watch a forwarded
// stream (sse_scanner.h, prompt_progress.h). Pure; any thread.
#pragma once

#include <cstddef>
#include <string_view>

namespace lemon::inference {

// Position just past the next blank line at or after `from`, or npos.
inline std::size_t next_sse_event_end(std::string_view s, std::size_t from) {
  for (std::size_t i = s.find('\n', from); i != std::string_view::npos; i = s.find('\n', i + 1)) {
    if (i + 1 < s.size() && s[i + 1] == '\n') {
      return i + 2;
    }
    if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') {
      return i + 3;
    }
  }
  return std::string_view::npos;
}

}  // namespace lemon::inference
