#include "lemon/cli/sse_events.h"

namespace lemon::cli {
namespace {

std::string_view field_value(std::string_view line, std::size_t colon) {
  std::string_view v = line.substr(colon + 1);
  if (!v.empty() && v.front() == ' ') {
    v.remove_prefix(1);
  }
  return v;
}

}  // namespace

void SseEvents::feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) {
  partial_.append(bytes);
  std::size_t start = 0;
  for (std::size_t nl = partial_.find('\n', start); nl != std::string::npos;
       nl = partial_.find('\n', start)) {
    std::string_view text(partial_.data() + start, nl - start);
    if (!text.empty() && text.back() == '\r') {
      text.remove_suffix(1);
    }
    line(text, on_event);
    start = nl + 1;
  }
  partial_.erase(0, start);
}

void SseEvents::line(std::string_view text, const std::function<void(const SseEvent&)>& on_event) {
  if (text.empty()) {
    if (has_data_ || !current_.event.empty()) {
      on_event(current_);
    }
    current_ = SseEvent{};
    has_data_ = false;
    return;
  }
  if (text.front() == ':') {
    return;
  }
  auto colon = text.find(':');
  std::string_view name = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : field_value(text, colon);
  if (name == "event") {
    current_.event = value;
  } else if (name == "data") {
    if (has_data_) {
      current_.data += '\n';
    }
    current_.data.append(value);
    has_data_ = true;
  }
}

}  // namespace lemon::cli
