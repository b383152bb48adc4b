#include "lemon/inference/prompt_progress.h"

#include <nlohmann/json.hpp>

#include "lemon/inference/sse_event_boundary.h"
#include "lemon/inference/sse_scanner.h"

namespace lemon::inference {

namespace {

constexpr std::string_view kProgressKey = "\"prompt_progress\":";

bool ends_at_boundary(std::string_view s) {
  return s.ends_with("\n\n") || s.ends_with("\n\r\n");
}

}  // namespace

std::optional<PromptProgress> prompt_progress_in(std::string_view event) {
  if (event.find(kProgressKey) == std::string_view::npos) {
    return std::nullopt;
  }
  auto data = sse_event_data(event);
  if (!data) {
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(*data, nullptr, false);
  if (!j.is_object()) {
    return std::nullopt;
  }
  auto it = j.find("prompt_progress");
  if (it == j.end() || !it->is_object()) {
    return std::nullopt;
  }
  PromptProgress p;
  p.total = it->value("total", 0LL);
  p.cache = it->value("cache", 0LL);
  p.processed = it->value("processed", 0LL);
  p.time_ms = it->value("time_ms", 0.0);
  return p;
}

std::optional<std::string> with_return_progress(std::string_view body) {
  const auto open = body.find_first_not_of(" \t\r\n");
  const auto close = body.find_last_not_of(" \t\r\n");
  if (open == std::string_view::npos || body[open] != '{' || body[close] != '}' ||
      body.find("\"return_progress\"") != std::string_view::npos) {
    return std::nullopt;
  }
  // The client's bytes stay as they are; the key goes in before the last
  // brace (after a comma unless the object is empty).
  const auto last = body.find_last_not_of(" \t\r\n", close - 1);
  const bool empty = last == open;
  std::string out;
  out.reserve(body.size() + 32);
  out.append(body.substr(0, close));
  out.append(empty ? "\"return_progress\":true" : ",\"return_progress\":true");
  out.append(body.substr(close));
  return out;
}

std::string_view ProgressStripper::feed(std::string_view data) {
  // The usual piece: whole events, none of them progress, nothing held.
  if (pending_.empty() && ends_at_boundary(data) &&
      data.find(kProgressKey) == std::string_view::npos) {
    return data;
  }
  pending_.append(data);
  out_.clear();
  std::size_t start = 0;
  for (std::size_t end; (end = next_sse_event_end(pending_, start)) != std::string::npos;
       start = end) {
    std::string_view event = std::string_view(pending_).substr(start, end - start);
    if (!prompt_progress_in(event)) {
      out_.append(event);
    }
  }
  pending_.erase(0, start);
  return out_;
}

}  // namespace lemon::inference
