#include "memory_admission.h"

#include <algorithm>
#include <map>

namespace lemon {

Status admit_to_memory(const TableSnapshot& table, const AdmissionAsk& ask,
                       const std::vector<DeviceReading>& readings, const BudgetRule& rule,
                       std::vector<std::shared_ptr<ServerSlot>>& victims, bool may_evict) {
  DeviceBytes ours;
  for (const auto& g : table.groups) {
    for (const auto& r : g.replicas) {
      for (const auto& [device, bytes] : r.charges) {
        ours[device] += bytes;
      }
    }
  }
  const DeviceBytes budgets = device_budgets(readings, ours, rule);
  std::vector<ServerMemory> servers;
  std::map<std::string, std::shared_ptr<ServerSlot>> by_id;
  for (const auto& g : table.groups) {
    for (const auto& r : g.replicas) {
      if (std::find(victims.begin(), victims.end(), r.slot) != victims.end() ||
          (!ask.replica && g.model == ask.model)) {
        continue;  // already going (a reload replaces the model's servers too)
      }
      const std::string id = std::to_string(r.slot->id);
      // A higher priority than the load's is as safe from it as a pin.
      servers.push_back(
          {id, r.charges, r.in_flight, r.lru_tick, g.pinned || g.priority > ask.priority});
      by_id[id] = r.slot;
    }
  }
  AdmissionPlan plan = plan_admission(servers, budgets, ask.estimate);
  if (plan.kind == AdmissionPlan::Kind::kTooBig) {
    return Error(ErrorCode::kInsufficientMemory,
                 "model '" + ask.model + "' needs about " + format_bytes(plan.need) + " on " +
                     plan.device + ", more than its memory budget of " + format_bytes(plan.budget) +
                     " (--memory-budget); nothing was unloaded",
                 "model");
  }
  if (plan.kind == AdmissionPlan::Kind::kPinned) {
    // Fail fast: it cannot fit even with every unpinned server of the
    // device gone, so nothing is evicted for it.
    std::string names;
    for (const auto& id : plan.pinned) {
      const std::string& model = by_id.at(id)->server->model_name();
      if (names.find("'" + model + "'") == std::string::npos) {
        names += (names.empty() ? "'" : ", '") + model + "'";
        if (const GroupState* g = table.find(model); g != nullptr && !g->pinned) {
          names += " (priority " + std::to_string(g->priority) + ")";
        }
      }
    }
    return Error(ErrorCode::kInsufficientMemory,
                 "model '" + ask.model + "' needs about " + format_bytes(plan.need) + " on " +
                     plan.device + ", which its memory budget of " + format_bytes(plan.budget) +
                     " (--memory-budget) has only with pinned or higher-priority " + names +
                     " unloaded; nothing was unloaded (unpin with POST /internal/pin, or unload)",
                 "model");
  }
  if (plan.kind == AdmissionPlan::Kind::kEvict) {
    if (!may_evict) {
      return Error(ErrorCode::kInsufficientMemory,
                   "'" + ask.model + "' would need " + std::to_string(plan.victims.size()) +
                       " other server(s) unloaded to fit another replica");
    }
    for (const auto& id : plan.victims) {
      victims.push_back(by_id.at(id));
    }
  }
  return ok_status();
}

DeviceBytes room_after(const TableSnapshot& table, const AdmissionAsk& ask,
                       const std::vector<DeviceReading>& readings, const BudgetRule& rule,
                       const std::vector<std::shared_ptr<ServerSlot>>& victims) {
  DeviceBytes ours;
  DeviceBytes staying;
  for (const auto& g : table.groups) {
    for (const auto& r : g.replicas) {
      const bool goes = std::find(victims.begin(), victims.end(), r.slot) != victims.end() ||
                        (!ask.replica && g.model == ask.model);
      for (const auto& [device, bytes] : r.charges) {
        ours[device] += bytes;
        if (!goes) {
          staying[device] += bytes;
        }
      }
    }
  }
  DeviceBytes room = device_budgets(readings, ours, rule);
  for (auto& [device, bytes] : room) {
    bytes = std::max<std::int64_t>(0, bytes - staying[device]);
  }
  return room;
}

std::vector<DeviceMemoryInfo> device_report(const std::vector<DeviceReading>& readings,
                                            const DeviceBytes& ours, const BudgetRule& rule) {
  const DeviceBytes budgets = device_budgets(readings, ours, rule);
  std::vector<DeviceMemoryInfo> out;
  for (const auto& d : readings) {
    DeviceMemoryInfo info;
    info.device = d.device;
    info.total = d.total;
    info.available = d.available;
    info.budget = budgets.contains(d.device) ? budgets.at(d.device) : 0;
    info.used_by_router = ours.contains(d.device) ? ours.at(d.device) : 0;
    out.push_back(info);
  }
  return out;
}

}  // namespace lemon
