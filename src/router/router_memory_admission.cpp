// RouterCore's memory admission (issue #13 §1): what each server is charged
// per device, the budgets left, and whether a load fits or which idle
// servers plan_admission() would unload for it.
#include "router_core.h"

#include <algorithm>

#include "lemon/core/mutex.h"
#include "load_job.h"

namespace lemon {

DeviceBytes RouterCore::charges(const ServerSlot& slot) {
  DeviceBytes out = slot.estimate;
  if (const auto measured = slot.measured_ram.load(std::memory_order_relaxed); measured > 0) {
    out[kRamDevice] = measured;
  }
  return out;
}

DeviceBytes RouterCore::budgets_for(const std::vector<DeviceReading>& readings) const {
  DeviceBytes ours;
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      for (const auto& [device, bytes] : charges(*r)) {
        ours[device] += bytes;
      }
    }
  }
  return device_budgets(readings, ours, live_.memory_budget.value_or(config_.memory_budget));
}

Status RouterCore::admit(const LoadJob& job, const std::vector<DeviceReading>& readings,
                         std::vector<std::shared_ptr<ServerSlot>>& victims, bool may_evict) const {
  const DeviceBytes budgets = budgets_for(readings);
  std::vector<ServerMemory> servers;
  std::map<std::string, std::shared_ptr<ServerSlot>> by_id;
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      if (std::find(victims.begin(), victims.end(), r) != victims.end() ||
          (job.replica == false && name == job.model)) {
        continue;  // already going (a reload replaces the model's servers too)
      }
      const std::string id = std::to_string(r->id);
      // A higher priority than the load's is as safe from it as a pin.
      servers.push_back({id, charges(*r), r->in_flight.load(), r->lru_tick,
                         group.pinned || group.priority > job.priority});
      by_id[id] = r;
    }
  }
  AdmissionPlan plan = plan_admission(servers, budgets, job.estimate);
  if (plan.kind == AdmissionPlan::Kind::kTooBig) {
    return Error(ErrorCode::kInsufficientMemory,
                 "model '" + job.model + "' needs about " + format_bytes(plan.need) + " on " +
                     plan.device + ", more than its memory budget of " + format_bytes(plan.budget) +
                     " (--memory-budget); nothing was unloaded",
                 "model");
  }
  if (plan.kind == AdmissionPlan::Kind::kPinned) {
    // Fail fast (issue #29 §3): it cannot fit even with every unpinned
    // server of the device gone, so nothing is evicted for it.
    std::string names;
    for (const auto& id : plan.pinned) {
      const std::string& model = by_id.at(id)->server->model_name();
      if (names.find("'" + model + "'") == std::string::npos) {
        names += (names.empty() ? "'" : ", '") + model + "'";
        if (auto g = groups_.find(model); g != groups_.end() && !g->second.pinned) {
          names += " (priority " + std::to_string(g->second.priority) + ")";
        }
      }
    }
    return Error(ErrorCode::kInsufficientMemory,
                 "model '" + job.model + "' needs about " + format_bytes(plan.need) + " on " +
                     plan.device + ", which its memory budget of " + format_bytes(plan.budget) +
                     " (--memory-budget) has only with pinned or higher-priority " + names +
                     " unloaded; nothing was unloaded (unpin with POST /internal/pin, or unload)",
                 "model");
  }
  if (plan.kind == AdmissionPlan::Kind::kEvict) {
    if (!may_evict) {
      return Error(ErrorCode::kInsufficientMemory,
                   "'" + job.model + "' would need " + std::to_string(plan.victims.size()) +
                       " other server(s) unloaded to fit another replica");
    }
    for (const auto& id : plan.victims) {
      victims.push_back(by_id.at(id));
    }
  }
  return ok_status();
}

}  // namespace lemon
