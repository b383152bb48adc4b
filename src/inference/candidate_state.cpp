#include "lemon/inference/candidate_state.h"

#include <algorithm>
#include <filesystem>

#include "lemon/backends/server_factory.h"
#include "lemon/router/eviction_policy.h"
#include "lemon/router/memory_policy.h"

namespace lemon::inference {
namespace {

constexpr double kBytesPerGb = 1e9;

// The device a server's memory is mostly charged to.
std::string charged_device(const LoadedServerInfo& info) {
  return primary_device(info.memory_estimate);
}

bool fits_now(const CandidateFacts& c, const RouterView& view) {
  std::vector<SlotView> slots;
  std::vector<ServerMemory> servers;
  for (const auto& s : view.servers) {
    if (s.info.draining) {
      continue;
    }
    const int in_flight = s.in_flight();
    slots.push_back({s.info.model_name, s.info.type, s.info.device, in_flight,
                     static_cast<std::uint64_t>(s.last_use_ms()), s.info.pinned, s.info.priority});
    DeviceBytes charges = s.info.memory_estimate;
    if (s.info.measured_ram > 0) {
      charges[kRamDevice] = s.info.measured_ram;
    }
    servers.push_back({s.info.model_name, std::move(charges), in_flight,
                       static_cast<std::uint64_t>(s.last_use_ms()), s.info.pinned});
  }
  const LoadTarget target{c.name, c.type, c.device, 0};
  if (!pinned_in_the_way(slots, target, view.limits).empty() ||
      !outranking_in_the_way(slots, target, view.limits).empty()) {
    return false;
  }
  std::vector<std::string> going;
  for (const auto& e : plan_eviction(slots, target, view.limits)) {
    auto busy = std::find_if(slots.begin(), slots.end(), [&](const SlotView& s) {
      return s.model == e.model && s.in_flight > 0;
    });
    if (busy != slots.end()) {
      return false;
    }
    going.push_back(e.model);
  }
  if (c.bytes <= 0) {
    return true;  // no estimate: the slots decide
  }
  DeviceBytes budgets;
  for (const auto& d : view.devices) {
    if (d.budget > 0) {
      budgets[d.device] = d.budget;
    }
  }
  // A GPU model goes where the GPU models loaded now are (gpu0 when none).
  std::string device = kRamDevice;
  if (c.device & Device::kGpu) {
    device = gpu_device(0);
    for (const auto& s : view.servers) {
      if (s.info.device & Device::kGpu) {
        device = charged_device(s.info);
        break;
      }
    }
  }
  std::erase_if(servers, [&](const ServerMemory& m) {
    return std::find(going.begin(), going.end(), m.id) != going.end();
  });
  const AdmissionPlan plan = plan_admission(servers, budgets, DeviceBytes{{device, c.bytes}});
  switch (plan.kind) {
    case AdmissionPlan::Kind::kFits:
      return true;
    case AdmissionPlan::Kind::kEvict:
      return std::none_of(plan.victims.begin(), plan.victims.end(), [&](const std::string& id) {
        return std::any_of(servers.begin(), servers.end(),
                           [&](const ServerMemory& m) { return m.id == id && m.in_flight > 0; });
      });
    case AdmissionPlan::Kind::kTooBig:
    case AdmissionPlan::Kind::kPinned:
      return false;
  }
  return false;
}

std::int64_t file_bytes(const ModelInfo& info) {
  std::int64_t total = 0;
  for (const auto& [role, path] : info.resolved_paths) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec) {
      total += static_cast<std::int64_t>(size);
    }
  }
  return total;
}

}  // namespace

routing::RouterState candidate_states(const std::vector<CandidateFacts>& candidates,
                                      const RouterView& view, bool with_fits) {
  routing::RouterState out;
  for (const auto& c : candidates) {
    routing::CandidateState& state = out[c.name];
    state.size_gb = c.size_gb > 0 ? c.size_gb : static_cast<double>(c.bytes) / kBytesPerGb;
    for (const auto& s : view.servers) {
      if (s.info.model_name == c.name && !s.info.draining) {
        state.loaded = true;
      }
    }
    if (auto waiting = view.waiting.find(c.name); waiting != view.waiting.end()) {
      state.queued = waiting->second;
    }
    state.fits = !with_fits || state.loaded || fits_now(c, view);
  }
  return out;
}

CandidateFacts candidate_facts(const ModelCatalogue& catalogue, const std::string& name,
                               const RecipeOptions& cli, bool with_bytes) {
  CandidateFacts facts;
  facts.name = name;
  auto info = catalogue.find(name);
  if (!info) {
    return facts;
  }
  facts.type = info->type;
  facts.size_gb = info->size_gb;
  const RecipeOptions effective = info->saved_options.inherit(cli).restricted_to(info->recipe);
  facts.device = device_for_recipe(info->recipe, backend_for(info->recipe, effective));
  if (facts.device == Device::kNone) {
    facts.device = Device::kCpu;
  }
  if (!with_bytes) {
    return facts;
  }
  if (info->size_gb > 0) {
    facts.bytes = static_cast<std::int64_t>(info->size_gb * kBytesPerGb);
  } else if (auto resolved = catalogue.resolve(name); resolved.ok()) {
    facts.bytes = file_bytes(*resolved);
  }
  return facts;
}

}  // namespace lemon::inference
