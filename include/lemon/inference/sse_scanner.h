// SseScanner: watches an SSE stream as it is forwarded, without holding it.
// It finds event boundaries, keeps only the last complete event that carries
// `timings` or `usage` (for /stats), notes `data: [DONE]`, and times the
// arrival of data events (router-measured time to first token and gaps
// between tokens). llama-server's prompt-progress events are not data
// events: it keeps the latest (prompt_progress.h). Memory is bounded by the
// largest single event.
//
// Thread-safety: one scanner per stream, used by one thread.
#pragma once

#include "lemon/http/error_response.h"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/inference/prompt_progress.h"

namespace lemon::inference {

using http::StreamFraming;

class SseScanner {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SseScanner(Clock::time_point request_sent, std::size_t max_gaps = 16384)
      : request_sent_(request_sent), max_gaps_(max_gaps) {}

  // Feeds the next bytes exactly as they were forwarded.
  void feed(std::string_view bytes, Clock::time_point now);

  bool saw_done() const { return saw_done_; }
  // True when everything fed so far ended on an event boundary.
  bool at_boundary() const { return pending_.empty(); }
  std::size_t data_events() const { return data_events_; }

  // The JSON of the last event carrying "timings" or "usage", if any.
  std::optional<nlohmann::json> last_usage() const;
  // Seconds from request to the first data event, if one arrived.
  std::optional<double> first_event_latency() const;
  // Seconds between consecutive data events (capped at max_gaps entries).
  const std::vector<double>& gaps() const { return gaps_; }
  // Seconds from the first to the last data event.
  double generation_seconds() const;
  // The latest prompt progress the backend reported, and how many reports
  // came so far.
  const std::optional<PromptProgress>& progress() const { return progress_; }
  std::size_t progress_reports() const { return progress_reports_; }

 private:
  void on_event(std::string_view event, Clock::time_point now);

  Clock::time_point request_sent_;
  std::size_t max_gaps_;
  std::string pending_;  // an incomplete event
  bool overflowed_ = false;
  bool saw_done_ = false;
  std::size_t data_events_ = 0;
  std::string last_usage_data_;
  std::optional<Clock::time_point> first_event_;
  std::optional<Clock::time_point> last_event_;
  std::vector<double> gaps_;
  std::optional<PromptProgress> progress_;
  std::size_t progress_reports_ = 0;
};

// The `data:` payload of one SSE event (lines joined with '\n'), or nullopt
// if the event has no data lines.
std::optional<std::string> sse_event_data(std::string_view event);

// If `chunk` is a whole number of complete SSE events and one of them is a
// backend error event (`data: {"error":...}`), returns the chunk with those
// events rewritten into the router's envelope, framed as `framing`'s error
// event; otherwise nullopt.
std::optional<std::string> normalize_sse_error_events(std::string_view chunk,
                                                      StreamFraming framing);

// A backend error body (llama.cpp's {"error":{"code":N,"message","type"}},
// whisper's {"error":"..."}, plain text, ...) in the router's envelope.
nlohmann::json normalize_backend_error(std::string_view body, int status);

}  // namespace lemon::inference
