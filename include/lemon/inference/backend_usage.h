// The token figures a backend reports about one answer, for /api/v1/stats
// and the metrics: llama.cpp's `timings`, OpenAI's `usage` (`input_tokens`
// and `output_tokens` in the Responses API), and FLM's
// `prefill_duration_ttft` and `decoding_speed_tps` inside it. Fields the
// backend did not send are left untouched.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>
#include "lemon/telemetry/request_stats.h"

namespace lemon::inference {

// From a parsed event or answer: its `timings` and `usage` objects, and
// those of a nested `response` (Responses API `response.completed`).
void stats_from_backend_json(const nlohmann::json& j, RequestStats& stats);

// From a whole answer's text: its last `timings` and `usage` objects, with
// the same result as stats_from_backend_json() on an answer holding only
// those two. Runs for every non-streaming answer, so it reads the two
// objects' numbers with nlohmann's SAX parser and builds no DOM.
// An object that is not well-formed JSON counts as absent.
void stats_from_answer(std::string_view body, RequestStats& stats);

}  // namespace lemon::inference
