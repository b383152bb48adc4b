#include "lemon/router/load_scheduler.h"

#include <algorithm>
#include <utility>

#include "lemon/router/eviction_policy.h"

namespace lemon {

Status LoadScheduler::run(LoadEffects& effects) {
  if (effects.serve_loaded()) {
    return ok_status();
  }
  if (Status created = effects.create_server(); !created.ok()) {
    return created;
  }
  Status started = effects.admit_and_start();
  if (started.ok() || effects.shutting_down()) {
    return started;
  }
  if (started.error().code() == ErrorCode::kOutOfMemory) {
    return recover_from_out_of_memory(effects, std::move(started).error());
  }
  if (on_load_failure(started.error().code(), 1, effects.failed_after_evict_all()) !=
      FailureAction::kEvictAllAndRetry) {
    return started;
  }
  effects.evict_all(EvictAllReason::kAfterFailedLoad, started.error());
  return effects.start_again();
}

NextLoad LoadScheduler::next(const std::vector<QueuedLoad>& queue,
                             const std::vector<SlotView>& table, const SlotLimits& limits,
                             std::chrono::milliseconds max_starvation,
                             std::chrono::steady_clock::time_point now) {
  NextLoad out;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const QueuedLoad& load = queue[i];
    if (!load.announced) {
      break;  // FIFO among the announced: a later one waits for this one's event
    }
    const LoadTarget target{load.model, load.type, Device::kNone, load.priority};
    if (!load.replica && !outranking_in_the_way(table, target, limits).empty() &&
        pinned_in_the_way(table, target, limits).empty()) {
      out.outranked.push_back(i);
      continue;  // no deadline: waiting never ends in evicting a higher priority
    }
    bool evicts_busy = false;
    if (!load.replica && !load.explicit_load) {
      for (const auto& e : plan_eviction(table, target, limits)) {
        for (const auto& server : table) {
          evicts_busy =
              evicts_busy || (server.model == e.model && e.reason == EvictionReason::kSlotLimit &&
                              server.in_flight > 0);
        }
      }
    }
    const auto deadline = load.queued_at + max_starvation;
    if (!evicts_busy || now >= deadline) {
      out.index = i;
      return out;
    }
    out.look_again = std::min(out.look_again, deadline);
  }
  return out;
}

Status LoadScheduler::recover_from_out_of_memory(LoadEffects& effects, Error failure) {
  while (!effects.shutting_down() && effects.evict_idle_for_memory()) {
    Status again = effects.start_again();
    if (again.ok() || again.error().code() != ErrorCode::kOutOfMemory) {
      return again;
    }
    failure = std::move(again).error();
  }
  if (!effects.shutting_down() && effects.evict_all(EvictAllReason::kAfterOutOfMemory, failure)) {
    Status last = effects.start_again();
    if (last.ok() || last.error().code() != ErrorCode::kOutOfMemory) {
      return last;
    }
    failure = std::move(last).error();
  }
  return effects.out_of_memory_everywhere(failure);
}

}  // namespace lemon
