#include "lemon/remote/endpoint_health.h"

#include <algorithm>

#include "lemon/core/enum_names.h"

namespace lemon::remote {

namespace {

constexpr auto kEndpointStateNames = std::to_array<EnumName<EndpointState>>(
    {{EndpointState::kHealthy, "healthy"}, {EndpointState::kDown, "down"}});

}  // namespace

const char* endpoint_state_name(EndpointState state) {
  return name_of(kEndpointStateNames, state, "unknown");
}

bool record_success(EndpointHealth& health) {
  const bool changed = health.state != EndpointState::kHealthy;
  health.state = EndpointState::kHealthy;
  health.failures = 0;
  health.last_error.clear();
  return changed;
}

bool record_failure(EndpointHealth& health, std::string why, HealthClock::time_point now,
                    const BreakerPolicy& policy) {
  if (health.state == EndpointState::kDown && now < health.retry_at) {
    // A failure of a try that started before it went down: the same outage.
    health.last_error = std::move(why);
    return false;
  }
  const bool changed = health.state != EndpointState::kDown;
  health.state = EndpointState::kDown;
  health.failures = std::min(health.failures + 1, 30);
  auto backoff = policy.first_backoff;
  for (int i = 1; i < health.failures && backoff < policy.max_backoff; ++i) {
    backoff *= 2;
  }
  health.retry_at = now + std::min(backoff, policy.max_backoff);
  health.last_error = std::move(why);
  return changed;
}

bool usable(const EndpointHealth& health, HealthClock::time_point now) {
  return health.state != EndpointState::kDown || now >= health.retry_at;
}

std::vector<std::size_t> endpoint_order(RemotePolicy policy,
                                        const std::vector<EndpointHealth>& health,
                                        const std::vector<EndpointLoad>& load,
                                        HealthClock::time_point now) {
  std::vector<std::size_t> up;
  std::vector<std::size_t> down;
  for (std::size_t i = 0; i < health.size(); ++i) {
    (usable(health[i], now) ? up : down).push_back(i);
  }
  if (policy == RemotePolicy::kLeastBusy) {
    auto busy = [&load](std::size_t i) {
      return load[i].in_flight + load[i].remote_queue.value_or(0);
    };
    std::stable_sort(up.begin(), up.end(),
                     [&busy](std::size_t a, std::size_t b) { return busy(a) < busy(b); });
  }
  std::stable_sort(down.begin(), down.end(), [&health](std::size_t a, std::size_t b) {
    return health[a].retry_at < health[b].retry_at;
  });
  up.insert(up.end(), down.begin(), down.end());
  return up;
}

}  // namespace lemon::remote
