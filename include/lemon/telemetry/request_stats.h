// RequestStats: what /stats reports about the most recent inference request,
// attributed to the model that served it (not to whichever server was used
// last). The inference path records it; /stats reads it.
//
// StatsStore keeps the latest record overall and per model.
// Thread-safety: StatsStore methods may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "lemon/core/mutex.h"

namespace lemon {

struct RequestStats {
  std::string model;
  double time_to_first_token = 0.0;  // seconds
  double tokens_per_second = 0.0;
  int input_tokens = 0;
  int output_tokens = 0;
  int prompt_tokens = 0;
  // Prompt tokens the backend took from its cache (llama.cpp's
  // timings.cache_n); nullopt when it did not say.
  std::optional<int> cache_tokens;
  std::vector<double> decode_token_times;  // seconds between streamed tokens
  std::int64_t finished_ms = 0;            // Unix ms

  nlohmann::json to_json() const;
};

class StatsStore {
 public:
  void record(RequestStats stats);
  std::optional<RequestStats> last() const;
  std::optional<RequestStats> last_for(const std::string& model) const;

 private:
  mutable Mutex mu_;
  std::optional<RequestStats> last_ LEMON_GUARDED_BY(mu_);
  std::map<std::string, RequestStats> by_model_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon
