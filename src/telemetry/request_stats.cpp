#include "lemon/telemetry/request_stats.h"
#include "lemon/core/mutex.h"

namespace lemon {

nlohmann::json RequestStats::to_json() const {
  return {{"model", model},
          {"time_to_first_token", time_to_first_token},
          {"tokens_per_second", tokens_per_second},
          {"input_tokens", input_tokens},
          {"output_tokens", output_tokens},
          {"prompt_tokens", prompt_tokens},
          {"cache_tokens", cache_tokens ? nlohmann::json(*cache_tokens) : nlohmann::json(nullptr)},
          {"decode_token_times", decode_token_times}};
}

void StatsStore::record(RequestStats stats) {
  MutexLock lock(mu_);
  by_model_[stats.model] = stats;
  last_ = std::move(stats);
}

std::optional<RequestStats> StatsStore::last() const {
  MutexLock lock(mu_);
  return last_;
}

std::optional<RequestStats> StatsStore::last_for(const std::string& model) const {
  MutexLock lock(mu_);
  auto it = by_model_.find(model);
  if (it == by_model_.end()) {
    return std::nullopt;
  }
  return it->second;
}

}  // namespace lemon
