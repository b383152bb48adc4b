// SseEvents: splits a Server-Sent Events byte stream into events (the
// `event:` name and the `data:` lines joined with '\n'), whatever the chunk
// boundaries. Comments (": ...") are dropped; CRLF and LF both end lines.
//
// Thread-safety: one parser per stream.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace lemon::cli {

struct SseEvent {
  std::string event;  // "" when the event has no `event:` line
  std::string data;
};

class SseEvents {
 public:
  // Calls `on_event` for every event completed by `bytes`.
  void feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);

 private:
  void line(std::string_view text, const std::function<void(const SseEvent&)>& on_event);

  std::string partial_;
  SseEvent current_;
  bool has_data_ = false;
};

}  // namespace lemon::cli
