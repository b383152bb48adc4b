#include "lemon/inference/sse_scanner.h"

#include "lemon/http/error_response.h"
#include "lemon/inference/sse_event_boundary.h"

namespace lemon::inference {

using http::StreamFraming;

using http::json_text;
using http::sse_error_event;
namespace {

constexpr std::size_t kMaxEventBytes = 1u << 20;

}  // namespace

std::optional<std::string> sse_event_data(std::string_view event) {
  std::optional<std::string> data;
  std::size_t pos = 0;
  while (pos < event.size()) {
    std::size_t eol = event.find('\n', pos);
    std::string_view line = event.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    pos = eol == std::string_view::npos ? event.size() : eol + 1;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.substr(0, 5) != "data:") {
      continue;
    }
    line.remove_prefix(5);
    if (!line.empty() && line.front() == ' ') {
      line.remove_prefix(1);
    }
    if (data) {
      *data += '\n';
      *data += line;
    } else {
      data = std::string(line);
    }
  }
  return data;
}

void SseScanner::feed(std::string_view bytes, Clock::time_point now) {
  std::string_view view = bytes;
  if (!pending_.empty()) {
    pending_.append(bytes);
    view = pending_;
  }
  std::size_t start = 0;
  for (std::size_t end; (end = next_sse_event_end(view, start)) != std::string_view::npos;
       start = end) {
    if (!overflowed_) {
      on_event(view.substr(start, end - start), now);
    }
    overflowed_ = false;
  }
  std::string rest(view.substr(start));
  if (rest.size() > kMaxEventBytes) {
    // Too large to matter for stats: drop it, but keep its last bytes so a
    // blank line split across two feeds still ends it.
    rest.erase(0, rest.size() - 3);
    overflowed_ = true;
  }
  pending_ = std::move(rest);
}

void SseScanner::on_event(std::string_view event, Clock::time_point now) {
  // Runs once per streamed token: look at the raw event first and copy its
  // data out only for the rare events that matter ([DONE], usage/timings).
  if (event.find("data:") == std::string_view::npos) {
    return;  // a comment or keepalive
  }
  if (event.find("[DONE]") != std::string_view::npos) {
    auto data = sse_event_data(event);
    if (data && *data == "[DONE]") {
      saw_done_ = true;
      return;
    }
  }
  if (auto progress = prompt_progress_in(event)) {
    progress_ = *progress;  // the prompt is still being read: no token yet
    ++progress_reports_;
    return;
  }
  ++data_events_;
  if (last_event_ && gaps_.size() < max_gaps_) {
    gaps_.push_back(std::chrono::duration<double>(now - *last_event_).count());
  }
  if (!first_event_) {
    first_event_ = now;
  }
  last_event_ = now;
  if (event.find("\"timings\"") != std::string_view::npos ||
      event.find("\"usage\"") != std::string_view::npos) {
    if (auto data = sse_event_data(event)) {
      last_usage_data_ = std::move(*data);
    }
  }
}

std::optional<nlohmann::json> SseScanner::last_usage() const {
  if (last_usage_data_.empty()) {
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(last_usage_data_, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return std::nullopt;
  }
  return j;
}

std::optional<double> SseScanner::first_event_latency() const {
  if (!first_event_) {
    return std::nullopt;
  }
  return std::chrono::duration<double>(*first_event_ - request_sent_).count();
}

double SseScanner::generation_seconds() const {
  if (!first_event_ || !last_event_) {
    return 0.0;
  }
  return std::chrono::duration<double>(*last_event_ - *first_event_).count();
}

nlohmann::json normalize_backend_error(std::string_view body, int status) {
  const char* fallback_type = error_type_for_status(status);
  nlohmann::json out = {{"message", std::string(body)},
                        {"type", fallback_type},
                        {"param", nullptr},
                        {"code", "backend_error"}};
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("error")) {
    const auto& e = parsed["error"];
    if (e.is_string()) {
      out["message"] = e;
    } else if (e.is_object()) {
      if (e.contains("message") && e["message"].is_string()) {
        out["message"] = e["message"];
      } else {
        out["message"] = json_text(e);
      }
      if (e.contains("type") && e["type"].is_string()) {
        out["type"] = e["type"];
        out["code"] = e["type"];
      }
      if (e.contains("code") && e["code"].is_string()) {
        out["code"] = e["code"];
      }
      if (e.contains("param") && e["param"].is_string()) {
        out["param"] = e["param"];
      }
    }
  } else if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("message") &&
             parsed["message"].is_string()) {
    out["message"] = parsed["message"];
  }
  if (out["message"].get_ref<const std::string&>().empty()) {
    out["message"] = "backend answered HTTP " + std::to_string(status);
  }
  return {{"error", std::move(out)}};
}

std::optional<std::string> normalize_sse_error_events(std::string_view chunk,
                                                      StreamFraming framing) {
  if (chunk.find("\"error\"") == std::string_view::npos) {
    return std::nullopt;
  }
  std::string out;
  bool changed = false;
  std::size_t start = 0;
  for (std::size_t end; (end = next_sse_event_end(chunk, start)) != std::string_view::npos;
       start = end) {
    std::string_view event = chunk.substr(start, end - start);
    auto data = sse_event_data(event);
    if (data && data->rfind("{\"error\"", 0) == 0) {
      out += sse_error_event(json_text(normalize_backend_error(*data, 500)), framing);
      changed = true;
    } else {
      out.append(event);
    }
  }
  if (start != chunk.size() || !changed) {
    return std::nullopt;  // not whole events, or nothing to rewrite
  }
  return out;
}

}  // namespace lemon::inference
