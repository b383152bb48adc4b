#include "lemon/http/key_limits.h"

#include <algorithm>
#include <cmath>

namespace lemon::http {

std::int64_t take_request(RateBucket& bucket, int per_minute, std::int64_t now_ms) {
  if (per_minute <= 0) {
    return 0;
  }
  const double capacity = per_minute;
  const double per_ms = capacity / 60'000.0;
  if (bucket.tokens < 0) {
    bucket.tokens = capacity;
  } else {
    const auto elapsed = static_cast<double>(std::max<std::int64_t>(0, now_ms - bucket.at_ms));
    bucket.tokens = std::min(capacity, bucket.tokens + elapsed * per_ms);
  }
  bucket.at_ms = now_ms;
  if (bucket.tokens >= 1.0) {
    bucket.tokens -= 1.0;
    return 0;
  }
  return std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::ceil((1.0 - bucket.tokens) / per_ms)));
}

KeyLimiter::Lease::Lease(Lease&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), name_(std::move(other.name_)) {}

KeyLimiter::Lease& KeyLimiter::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) {
      owner_->release(name_);
    }
    owner_ = std::exchange(other.owner_, nullptr);
    name_ = std::move(other.name_);
  }
  return *this;
}

KeyLimiter::Lease::~Lease() {
  if (owner_ != nullptr) {
    owner_->release(name_);
  }
}

Result<KeyLimiter::Lease> KeyLimiter::admit(const ApiKey& key, std::int64_t now_ms) {
  if (key.max_concurrent <= 0 && key.requests_per_minute <= 0) {
    return Lease();
  }
  MutexLock lock(mu_);
  KeyState& state = keys_[key.name];
  if (key.max_concurrent > 0 && state.in_flight >= key.max_concurrent) {
    return Error(ErrorCode::kRateLimited, "API key '" + key.name + "' has " +
                                              std::to_string(state.in_flight) +
                                              " requests running, its limit (max_concurrent)")
        .with_retry_after(1);
  }
  if (const std::int64_t wait_ms = take_request(state.bucket, key.requests_per_minute, now_ms);
      wait_ms > 0) {
    return Error(ErrorCode::kRateLimited, "API key '" + key.name + "' is over its " +
                                              std::to_string(key.requests_per_minute) +
                                              " requests a minute (requests_per_minute)")
        .with_retry_after(static_cast<int>((wait_ms + 999) / 1000));
  }
  ++state.in_flight;
  return Lease(this, key.name);
}

int KeyLimiter::in_flight(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = keys_.find(name);
  return it == keys_.end() ? 0 : it->second.in_flight;
}

void KeyLimiter::release(const std::string& name) {
  MutexLock lock(mu_);
  auto it = keys_.find(name);
  if (it != keys_.end() && it->second.in_flight > 0) {
    --it->second.in_flight;
  }
}

}  // namespace lemon::http
