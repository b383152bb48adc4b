#include "lemon/router/eviction_policy.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "lemon/core/enum_names.h"

namespace lemon {

namespace {

constexpr auto kEvictionReasonNames =
    std::to_array<EnumName<EvictionReason>>({{EvictionReason::kReload, "reload"},
                                             {EvictionReason::kNpuExclusive, "npu_exclusive"},
                                             {EvictionReason::kSlotLimit, "slot_limit"},
                                             {EvictionReason::kMemory, "memory"},
                                             {EvictionReason::kOutOfMemory, "out_of_memory"}});

}  // namespace

const char* eviction_reason_name(EvictionReason reason) {
  return name_of(kEvictionReasonNames, reason, "");
}

std::string choose_pressure_victim(const std::vector<SlotView>& slots) {
  const SlotView* best = nullptr;
  for (const auto& s : slots) {
    if (s.pinned || s.in_flight > 0) {
      continue;
    }
    if (best == nullptr || std::tie(s.priority, s.last_use, s.model) <
                               std::tie(best->priority, best->last_use, best->model)) {
      best = &s;
    }
  }
  return best != nullptr ? best->model : std::string();
}

std::string choose_lru_victim(const std::vector<SlotView>& slots, ModelType type,
                              const std::vector<std::string>& exclude, int max_priority) {
  const SlotView* best = nullptr;
  auto better = [](const SlotView& a, const SlotView& b) {
    if (a.priority != b.priority) {
      return a.priority < b.priority;
    }
    bool a_idle = a.in_flight == 0;
    bool b_idle = b.in_flight == 0;
    if (a_idle != b_idle) {
      return a_idle;
    }
    if (a.last_use != b.last_use) {
      return a.last_use < b.last_use;
    }
    return a.model < b.model;
  };
  for (const auto& s : slots) {
    if (s.type != type || s.pinned || s.priority > max_priority ||
        std::find(exclude.begin(), exclude.end(), s.model) != exclude.end()) {
      continue;
    }
    if (best == nullptr || better(s, *best)) {
      best = &s;
    }
  }
  return best != nullptr ? best->model : std::string();
}

std::vector<Eviction> plan_eviction(const std::vector<SlotView>& slots, const LoadTarget& target,
                                    const SlotLimits& limits) {
  std::vector<Eviction> plan;
  std::vector<std::string> chosen;
  auto choose = [&](const std::string& model, EvictionReason reason) {
    plan.push_back({model, reason});
    chosen.push_back(model);
  };
  // Sorted by name so that the NPU rule lists victims deterministically.
  std::vector<const SlotView*> by_name;
  by_name.reserve(slots.size());
  for (const auto& s : slots) {
    by_name.push_back(&s);
  }
  std::sort(by_name.begin(), by_name.end(),
            [](const SlotView* a, const SlotView* b) { return a->model < b->model; });

  // (1) Reload: the old server of the same model goes first.
  for (const SlotView* s : by_name) {
    if (s->model == target.model) {
      choose(s->model, EvictionReason::kReload);
    }
  }
  // (2) NPU exclusivity, across every type and regardless of the limits.
  if (target.device & Device::kNpu) {
    for (const SlotView* s : by_name) {
      if ((s->device & Device::kNpu) && !s->pinned && s->priority <= target.priority &&
          std::find(chosen.begin(), chosen.end(), s->model) == chosen.end()) {
        choose(s->model, EvictionReason::kNpuExclusive);
      }
    }
  }
  // (3) The per-type limit, LRU first (idle before busy).
  if (!limits.unlimited(target.type)) {
    auto remaining = static_cast<int>(std::count_if(slots.begin(), slots.end(), [&](const auto& s) {
      return s.type == target.type &&
             std::find(chosen.begin(), chosen.end(), s.model) == chosen.end();
    }));
    while (remaining >= limits.limit(target.type)) {
      std::string victim = choose_lru_victim(slots, target.type, chosen, target.priority);
      if (victim.empty()) {
        break;
      }
      choose(victim, EvictionReason::kSlotLimit);
      --remaining;
    }
  }
  return plan;
}

namespace {

// Whether `target`'s type is still at its limit once plan_eviction's plan
// for `target` is carried out.
bool still_full(const std::vector<SlotView>& slots, const LoadTarget& target,
                const SlotLimits& limits) {
  const std::vector<Eviction> plan = plan_eviction(slots, target, limits);
  int staying = 0;
  for (const auto& s : slots) {
    const bool goes = std::any_of(plan.begin(), plan.end(),
                                  [&](const Eviction& e) { return e.model == s.model; });
    if (s.type == target.type && !goes) {
      ++staying;
    }
  }
  return staying >= limits.limit(target.type);
}

}  // namespace

std::vector<std::string> pinned_in_the_way(const std::vector<SlotView>& slots,
                                           const LoadTarget& target, const SlotLimits& limits) {
  std::vector<std::string> pinned;
  auto add = [&pinned](const std::string& model) {
    if (std::find(pinned.begin(), pinned.end(), model) == pinned.end()) {
      pinned.push_back(model);
    }
  };
  if (target.device & Device::kNpu) {
    for (const auto& s : slots) {
      if (s.pinned && s.model != target.model && (s.device & Device::kNpu)) {
        add(s.model);
      }
    }
  }
  if (!limits.unlimited(target.type)) {
    // What is left of the type once the plan's evictions are gone: the
    // target's own server (a reload) and every unpinned one may go,
    // whatever its priority.
    LoadTarget above_all = target;
    above_all.priority = std::numeric_limits<int>::max();
    if (still_full(slots, above_all, limits)) {
      for (const auto& s : slots) {
        if (s.type == target.type && s.pinned && s.model != target.model) {
          add(s.model);
        }
      }
    }
  }
  std::sort(pinned.begin(), pinned.end());
  return pinned;
}

std::vector<std::string> outranking_in_the_way(const std::vector<SlotView>& slots,
                                               const LoadTarget& target, const SlotLimits& limits) {
  std::vector<std::string> outranking;
  auto outranks = [&target](const SlotView& s) {
    return !s.pinned && s.priority > target.priority && s.model != target.model;
  };
  if (target.device & Device::kNpu) {
    for (const auto& s : slots) {
      if (outranks(s) && (s.device & Device::kNpu)) {
        outranking.push_back(s.model);
      }
    }
  }
  if (!limits.unlimited(target.type)) {
    if (still_full(slots, target, limits)) {
      for (const auto& s : slots) {
        if (s.type == target.type && outranks(s) &&
            std::find(outranking.begin(), outranking.end(), s.model) == outranking.end()) {
          outranking.push_back(s.model);
        }
      }
    }
  }
  std::sort(outranking.begin(), outranking.end());
  return outranking;
}

FailureAction on_load_failure(ErrorCode code, int attempt, bool failed_after_evict_all) {
  if (attempt == 1 && !failed_after_evict_all && is_retryable_load_failure(code)) {
    return FailureAction::kEvictAllAndRetry;
  }
  return FailureAction::kFail;
}

bool may_start_while_victims_stop(Device new_server, const std::vector<VictimView>& victims,
                                  bool fits_beside_victims) {
  return fits_beside_victims && !victims.empty() && new_server == Device::kCpu &&
         std::all_of(victims.begin(), victims.end(), [](const VictimView& v) {
           return v.device == Device::kCpu && v.in_flight == 0;
         });
}

}  // namespace lemon
