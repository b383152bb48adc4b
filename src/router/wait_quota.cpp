#include "wait_quota.h"

namespace lemon {

WaitQuota::WaitQuota(int max_per_model, int max_total, ViewBoard& board)
    : max_per_model_(max_per_model), max_total_(max_total), board_(board) {}

WaitQuota::Place::~Place() {
  if (model_) {
    quota_.leave(*model_);
  }
}

std::optional<Error> WaitQuota::Place::join(std::string_view model) {
  if (model_) {
    return std::nullopt;
  }
  if (auto full = quota_.enter(model)) {
    return full;
  }
  model_.emplace(model);
  return std::nullopt;
}

std::optional<Error> WaitQuota::enter(std::string_view model) {
  MutexLock lock(mu_);
  if (total_ >= max_total_) {
    return Error(ErrorCode::kQueueFull,
                 std::to_string(total_) +
                     " requests are already waiting for a model or a free slot "
                     "(--max-queued-requests-total); try again shortly")
        .with_retry_after(1);
  }
  auto it = by_model_.find(model);
  if (it != by_model_.end() && it->second >= max_per_model_) {
    return Error(ErrorCode::kQueueFull,
                 std::to_string(it->second) + " requests are already waiting for '" +
                     std::string(model) + "' (--max-queued-requests); try again shortly",
                 "model")
        .with_retry_after(1);
  }
  ++total_;
  if (it == by_model_.end()) {
    by_model_.emplace(std::string(model), 1);
  } else {
    ++it->second;
  }
  publish();
  return std::nullopt;
}

void WaitQuota::leave(const std::string& model) {
  MutexLock lock(mu_);
  --total_;
  auto it = by_model_.find(model);
  if (it != by_model_.end() && --it->second == 0) {
    by_model_.erase(it);
  }
  publish();
}

void WaitQuota::publish() {
  board_.publish_waiting(by_model_, total_);
}

}  // namespace lemon
