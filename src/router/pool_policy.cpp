#include "lemon/router/pool_policy.h"

#include <algorithm>

namespace lemon {
namespace {

// Busy, waited for, or holding sessions: the keep-alive has not begun.
bool in_use(const ModelPoolView& m) {
  return m.waiting > 0 || std::any_of(m.replicas.begin(), m.replicas.end(), [](const auto& r) {
           return r.in_flight > 0 || r.sessions > 0;
         });
}

}  // namespace

PoolPlan plan_pool(const std::vector<ModelPoolView>& models, PoolClock::time_point now,
                   const PoolPolicy& policy) {
  PoolPlan plan;
  for (const auto& m : models) {
    int ready = 0;
    for (const auto& r : m.replicas) {
      ready += r.ready ? 1 : 0;
    }
    if (ready == 0) {
      continue;  // draining or gone: nothing to decide
    }
    if (m.waiting > 0) {
      if (!m.scaling_up && ready < m.max_replicas &&
          now - m.waiting_since >= policy.scale_up_after) {
        plan.scale_up.push_back(m.model);
      }
      continue;
    }
    if (m.pinned) {
      continue;  // only an explicit unload (or unpin) lets it go
    }
    if (auto deadline = keep_alive_deadline(m, now, policy);
        deadline && !in_use(m) && now >= *deadline) {
      plan.expired.push_back(m.model);
      continue;
    }
    // Scale down: idle ready replicas past scale_down_after that hold no
    // session, newest first, keeping one ready replica.
    std::vector<const ReplicaPoolView*> idle;
    for (const auto& r : m.replicas) {
      if (r.ready && r.in_flight == 0 && r.sessions == 0 &&
          now - r.idle_since >= policy.scale_down_after) {
        idle.push_back(&r);
      }
    }
    std::sort(idle.begin(), idle.end(),
              [](const auto* a, const auto* b) { return a->replica > b->replica; });
    int stoppable = ready - 1;
    for (const auto* r : idle) {
      if (stoppable <= 0) {
        break;
      }
      plan.scale_down.push_back(r->id);
      --stoppable;
    }
  }
  return plan;
}

std::optional<PoolClock::time_point> keep_alive_deadline(const ModelPoolView& m,
                                                         PoolClock::time_point now,
                                                         const PoolPolicy& policy) {
  const auto keep_alive = m.keep_alive ? m.keep_alive : policy.keep_alive;
  if (m.pinned || !keep_alive || keep_alive->count() < 0) {
    return std::nullopt;
  }
  PoolClock::time_point last_idle{};
  for (const auto& r : m.replicas) {
    last_idle = std::max(last_idle, r.idle_since);
  }
  return (in_use(m) ? now : last_idle) + *keep_alive;
}

std::vector<std::string> reload_when_idle(const std::vector<OptionReloadView>& models) {
  std::vector<std::string> out;
  for (const auto& m : models) {
    if (m.stale && m.in_flight == 0 && m.waiting == 0 && !m.load_queued) {
      out.push_back(m.model);
    }
  }
  return out;
}

}  // namespace lemon
