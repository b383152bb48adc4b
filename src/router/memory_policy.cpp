#include "lemon/router/memory_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace lemon {
namespace {

std::int64_t charge_on(const ServerMemory& s, const std::string& device) {
  auto it = s.charges.find(device);
  return it == s.charges.end() ? 0 : it->second;
}

// Idle before busy, then least recently used, then by id.
bool evict_before(const ServerMemory& a, const ServerMemory& b) {
  const bool a_idle = a.in_flight == 0;
  const bool b_idle = b.in_flight == 0;
  if (a_idle != b_idle) {
    return a_idle;
  }
  if (a.lru != b.lru) {
    return a.lru < b.lru;
  }
  return a.id < b.id;
}

}  // namespace

DeviceBytes device_budgets(const std::vector<DeviceReading>& devices, const DeviceBytes& ours,
                           const BudgetRule& rule) {
  DeviceBytes out;
  for (const auto& d : devices) {
    if (d.device == "ram" && rule.ram_bytes) {
      out[d.device] = *rule.ram_bytes;
      continue;
    }
    auto it = ours.find(d.device);
    const std::int64_t held = it == ours.end() ? 0 : it->second;
    const std::int64_t usable = std::min(d.total, std::max<std::int64_t>(0, d.available) + held);
    out[d.device] = static_cast<std::int64_t>(static_cast<double>(usable) * rule.fraction);
  }
  return out;
}

AdmissionPlan plan_admission(const std::vector<ServerMemory>& servers, const DeviceBytes& budgets,
                             const DeviceBytes& request) {
  AdmissionPlan plan;
  for (const auto& [device, need] : request) {
    auto b = budgets.find(device);
    if (b != budgets.end() && need > b->second) {
      plan.kind = AdmissionPlan::Kind::kTooBig;
      plan.device = device;
      plan.need = need;
      plan.budget = b->second;
      return plan;
    }
  }
  std::vector<ServerMemory> order = servers;
  std::sort(order.begin(), order.end(), evict_before);
  std::set<std::string> gone;
  for (const auto& [device, need] : request) {
    auto b = budgets.find(device);
    if (b == budgets.end() || need <= 0) {
      continue;
    }
    std::int64_t used = 0;
    for (const auto& s : servers) {
      used += charge_on(s, device);
    }
    for (const auto& s : servers) {
      if (gone.contains(s.id)) {
        used -= charge_on(s, device);  // already leaving for another device
      }
    }
    for (const auto& s : order) {
      if (used + need <= b->second) {
        break;
      }
      if (!s.pinned && !gone.contains(s.id) && charge_on(s, device) > 0) {
        gone.insert(s.id);
        plan.victims.push_back(s.id);
        used -= charge_on(s, device);
      }
    }
    if (used + need > b->second) {
      // Only the pinned servers are left to make room: nothing is evicted.
      AdmissionPlan pinned;
      pinned.kind = AdmissionPlan::Kind::kPinned;
      pinned.device = device;
      pinned.need = need;
      pinned.budget = b->second;
      for (const auto& s : order) {
        if (s.pinned && charge_on(s, device) > 0) {
          pinned.pinned.push_back(s.id);
        }
      }
      return pinned;
    }
  }
  plan.kind = plan.victims.empty() ? AdmissionPlan::Kind::kFits : AdmissionPlan::Kind::kEvict;
  return plan;
}

std::vector<std::string> plan_pressure_relief(const std::vector<ServerMemory>& servers,
                                              const std::vector<DeviceReading>& devices,
                                              std::int64_t margin) {
  std::vector<ServerMemory> idle;
  for (const auto& s : servers) {
    if (s.in_flight == 0 && !s.pinned) {
      idle.push_back(s);
    }
  }
  std::sort(idle.begin(), idle.end(), evict_before);
  std::vector<std::string> victims;
  std::set<std::string> gone;
  for (const auto& d : devices) {
    std::int64_t shortfall = margin - d.available;
    for (const auto& s : idle) {
      if (gone.contains(s.id)) {
        shortfall -= charge_on(s, d.device);  // already leaving for another device
      }
    }
    for (const auto& s : idle) {
      if (shortfall <= 0) {
        break;
      }
      const std::int64_t freed = charge_on(s, d.device);
      if (freed > 0 && !gone.contains(s.id)) {
        gone.insert(s.id);
        victims.push_back(s.id);
        shortfall -= freed;
      }
    }
  }
  return victims;
}

std::string primary_device(const DeviceBytes& estimate) {
  std::string device = kRamDevice;
  std::int64_t most = 0;
  for (const auto& [name, bytes] : estimate) {
    if (bytes > most) {
      device = name;
      most = bytes;
    }
  }
  return device;
}

std::vector<std::string> plan_out_of_memory_recovery(const std::vector<ServerMemory>& servers,
                                                     const std::string& device) {
  std::vector<ServerMemory> idle;
  for (const auto& s : servers) {
    if (s.in_flight == 0 && charge_on(s, device) > 0) {
      idle.push_back(s);
    }
  }
  std::sort(idle.begin(), idle.end(), evict_before);
  std::vector<std::string> victims;
  victims.reserve(idle.size());
  for (const auto& s : idle) {
    victims.push_back(s.id);
  }
  return victims;
}

DeviceBytes admission_charge(const DeviceBytes& estimate,
                             const std::optional<DeviceBytes>& remembered) {
  DeviceBytes charge = estimate;
  if (!remembered) {
    return charge;
  }
  for (auto& [device, bytes] : charge) {
    const auto measured = remembered->find(device);
    if (measured != remembered->end() && measured->second > 0) {
      const auto margin = std::max(
          kFootprintMarginFloor,
          static_cast<std::int64_t>(static_cast<double>(measured->second) * kFootprintMargin));
      bytes = measured->second + margin;
    }
  }
  return charge;
}

std::string format_bytes(std::int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1024.0 * 1024));
  } else if (b >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.0f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

}  // namespace lemon
