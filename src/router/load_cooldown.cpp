#include "lemon/router/load_cooldown.h"

#include <algorithm>

namespace lemon {
namespace {

constexpr std::chrono::seconds kFirstRest{5};
constexpr std::chrono::seconds kLongestRest{300};
constexpr int kFailuresBeforeRest = 2;

}  // namespace

std::chrono::seconds cooldown_after(int consecutive_failures) {
  if (consecutive_failures < kFailuresBeforeRest) {
    return std::chrono::seconds{0};
  }
  std::chrono::seconds rest = kFirstRest;
  for (int i = kFailuresBeforeRest; i < consecutive_failures && rest < kLongestRest; ++i) {
    rest *= 2;
  }
  return std::min(rest, kLongestRest);
}

std::chrono::seconds LoadCooldown::record_failure(std::string_view model, const Error& error,
                                                  Clock::time_point now, bool after_evict_all) {
  auto it = records_.find(model);
  if (it == records_.end()) {
    it = records_.emplace(std::string(model), Record{}).first;
  }
  Record& r = it->second;
  ++r.failures;
  r.last = error;
  r.after_evict_all = r.after_evict_all || after_evict_all;
  std::chrono::seconds rest = cooldown_after(r.failures);
  r.until = now + rest;
  return rest;
}

void LoadCooldown::reset(std::string_view model) {
  if (auto it = records_.find(model); it != records_.end()) {
    records_.erase(it);
  }
}

std::optional<Error> LoadCooldown::refusal(std::string_view model, Clock::time_point now) const {
  auto it = records_.find(model);
  if (it == records_.end() || !it->second.last || now >= it->second.until) {
    return std::nullopt;
  }
  auto left = std::chrono::ceil<std::chrono::seconds>(it->second.until - now);
  Error e = *it->second.last;
  std::string note = "; not retried for " + std::to_string(left.count()) + " s after " +
                     std::to_string(it->second.failures) +
                     " failed loads in a row (POST /api/v1/load retries at once)";
  return Error(e.code(), e.message() + note, e.param())
      .with_detail(e.detail())
      .with_retry_after(static_cast<int>(left.count()));
}

bool LoadCooldown::failed_after_evict_all(std::string_view model) const {
  auto it = records_.find(model);
  return it != records_.end() && it->second.after_evict_all;
}

int LoadCooldown::consecutive_failures(std::string_view model) const {
  auto it = records_.find(model);
  return it == records_.end() ? 0 : it->second.failures;
}

}  // namespace lemon
