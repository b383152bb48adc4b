// The decisions about a remote model's endpoints, as pure
// functions with the time passed in: each endpoint's circuit breaker, and
// the order in which a request tries the endpoints.
//
// - An endpoint is kUnknown until checked or used, kHealthy after a success,
//   kDown after a failure (a health check or a request that got no answer).
// - A down endpoint is skipped until its retry time: 1 s after the first
//   failure, doubling with each failed try after it, at most 60 s (failures
//   of tries that started before then, e.g. concurrent requests, do not
//   count). Then requests and the health check may try it again; a success
//   makes it healthy at once.
// - A request tries the usable endpoints first, in the policy's order
//   (failover: as listed; least_busy: fewest requests in flight, counting
//   what the remote reports of its own queue, ties as listed), then the down
//   ones (soonest retry first), so a request is refused only when every
//   endpoint failed it.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "lemon/remote/remote_spec.h"

namespace lemon::remote {

using HealthClock = std::chrono::steady_clock;

enum class EndpointState { kUnknown, kHealthy, kDown };
const char* endpoint_state_name(EndpointState state);

struct BreakerPolicy {
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{60000};
};

struct EndpointHealth {
  EndpointState state = EndpointState::kUnknown;
  int failures = 0;                    // in a row
  HealthClock::time_point retry_at{};  // kDown: skipped before this
  std::string last_error;              // the latest failure's reason ("" after a success)
};

// True when the change made the endpoint healthy (from down or unknown).
bool record_success(EndpointHealth& health);
// True when the change took the endpoint down (from healthy or unknown).
bool record_failure(EndpointHealth& health, std::string why, HealthClock::time_point now,
                    const BreakerPolicy& policy = {});
// Not down, or down with its retry time passed.
bool usable(const EndpointHealth& health, HealthClock::time_point now);

struct EndpointLoad {
  int in_flight = 0;                // this router's requests on it now
  std::optional<int> remote_queue;  // running + waiting the remote reports, if it does
};

// The indices of the endpoints in the order a request tries them.
// REQUIRES: health.size() == load.size().
std::vector<std::size_t> endpoint_order(RemotePolicy policy,
                                        const std::vector<EndpointHealth>& health,
                                        const std::vector<EndpointLoad>& load,
                                        HealthClock::time_point now);

}  // namespace lemon::remote
