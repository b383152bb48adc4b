#include "model_group.h"

namespace lemon {

std::shared_ptr<ServerSlot> find_server(const ModelGroups& groups, std::uint64_t server_id) {
  for (const auto& [name, group] : groups) {
    for (const auto& r : group.replicas) {
      if (r->id == server_id) {
        return r;
      }
    }
  }
  return nullptr;
}

LoadedServerInfo describe(const ServerSlot& slot, const ModelGroup& group) {
  const WrappedServer& s = *slot.server;
  LoadedServerInfo info;
  info.model_name = s.model_name();
  info.checkpoint = s.model().checkpoint();
  info.recipe = s.model().recipe;
  info.type = s.type();
  info.device = s.device();
  info.backend_url = s.base_url();
  info.recipe_options = s.options().to_json();
  info.pid = s.pid();
  info.in_flight = slot.in_flight;
  info.slots = slot.capacity;
  info.slot_ctx_size = s.slots().ctx_size;
  info.replica = slot.replica;
  info.server_id = slot.id;
  info.memory_estimate = slot.estimate;
  info.memory_charged = slot.charged;
  info.measured_ram = slot.measured_ram.load(std::memory_order_relaxed);
  info.speculation = s.speculation();
  if (const auto& fit = s.fitted_context()) {
    info.context_fit = {
        {"ctx_size", fit->ctx_size}, {"reason", fit->reason}, {"detail", fit->detail}};
  }
  info.waiting = static_cast<int>(group.line.size());
  info.pinned = group.pinned;
  info.priority = group.priority;
  info.last_use_ms = slot.last_use_ms.load(std::memory_order_relaxed);
  info.draining = slot.state == SlotState::kDraining;
  return info;
}

std::vector<LoadedServerInfo> describe_all(const ModelGroups& groups) {
  std::vector<LoadedServerInfo> out;
  for (const auto& [name, group] : groups) {
    for (const auto& r : group.replicas) {
      out.push_back(describe(*r, group));
    }
  }
  return out;
}

std::optional<LoadedServerInfo> describe_most_recent(const ModelGroups& groups,
                                                     std::string_view last_loaded) {
  if (auto it = groups.find(last_loaded); it != groups.end()) {
    return describe(*it->second.replicas.front(), it->second);
  }
  const ServerSlot* newest = nullptr;
  const ModelGroup* newest_group = nullptr;
  for (const auto& [name, group] : groups) {
    for (const auto& r : group.replicas) {
      if (newest == nullptr || r->id > newest->id) {
        newest = r.get();
        newest_group = &group;
      }
    }
  }
  if (newest == nullptr) {
    return std::nullopt;
  }
  return describe(*newest, *newest_group);
}

DeviceBytes held_per_device(const ModelGroups& groups) {
  DeviceBytes ours;
  for (const auto& [name, group] : groups) {
    for (const auto& r : group.replicas) {
      for (const auto& [device, bytes] : r->charges()) {
        ours[device] += bytes;
      }
    }
  }
  return ours;
}

}  // namespace lemon
