// RouterCore's queries: what is loaded (describe, loaded, the published
// RouterView), the devices' memory as last read, and the policy's snapshot.
#include "router_core.h"

#include <algorithm>

#include "lemon/core/clock.h"
#include "lemon/core/mutex.h"
#include "load_job.h"

namespace lemon {

LoadedServerInfo RouterCore::describe(const ServerSlot& slot) const {
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
  info.measured_ram = slot.measured_ram.load(std::memory_order_relaxed);
  if (auto g = groups_.find(s.model_name()); g != groups_.end()) {
    info.waiting = static_cast<int>(g->second.line.size());
    info.pinned = g->second.pinned;
    info.priority = g->second.priority;
  }
  info.last_use_ms = slot.last_use_ms.load(std::memory_order_relaxed);
  info.draining = slot.state == SlotState::kDraining;
  return info;
}

std::vector<LoadedServerInfo> RouterCore::loaded() const {
  MutexLock lock(mu_);
  std::vector<LoadedServerInfo> out;
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      out.push_back(describe(*r));
    }
  }
  return out;
}

std::map<std::string, std::int64_t> RouterCore::keep_alive_expiries() const {
  const std::int64_t unix_now = unix_ms_now();
  MutexLock lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  const PoolPolicy policy = pool_policy();
  std::map<std::string, std::int64_t> out;
  for (const auto& [name, group] : groups_) {
    if (auto deadline = keep_alive_deadline(pool_view(name, group, now), now, policy)) {
      out.emplace(
          name, unix_now +
                    std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now).count());
    }
  }
  return out;
}

std::optional<LoadedServerInfo> RouterCore::most_recently_loaded() const {
  MutexLock lock(mu_);
  if (auto it = groups_.find(last_loaded_); it != groups_.end()) {
    return describe(*it->second.replicas.front());
  }
  const ServerSlot* newest = nullptr;
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      if (newest == nullptr || r->id > newest->id) {
        newest = r.get();
      }
    }
  }
  if (newest == nullptr) {
    return std::nullopt;
  }
  return describe(*newest);
}

RecipeOptions RouterCore::cli_options() const {
  MutexLock lock(mu_);
  return live_.cli_options;
}

void RouterCore::apply_live_settings(const LiveRouterSettings& settings) {
  {
    MutexLock lock(mu_);
    if (!(settings.cli_options == live_.cli_options)) {
      ++cli_generation_;
    }
    const auto budget = live_.memory_budget;
    const auto margin = live_.memory_margin;
    live_ = settings;
    if (!live_.memory_budget) {  // off now, or never on: what is in force stays
      live_.memory_budget = budget;
      live_.memory_margin = margin;
    }
    republish();
  }
  cv_.notify_all();  // a raised limit may let a queued load go
  housekeeper_cv_.notify_all();
}

void RouterCore::republish() {
  auto view = std::make_shared<RouterView>();
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      view->servers.push_back({describe(*r), r});
    }
  }
  view->waiting.insert(queued_by_model_.begin(), queued_by_model_.end());
  view->waiting_total = queued_total_;
  if (current_job_ && !current_job_->done) {
    view->loading.push_back(current_job_->model);
  }
  for (const auto& job : queue_) {
    view->loading.push_back(job->model);
  }
  view->published_ms = unix_ms_now();
  view->devices = memory_report_locked();
  view->limits = live_.limits;
  MutexLock lock(view_mu_);
  view_ = std::move(view);
}

std::shared_ptr<const RouterView> RouterCore::view() const {
  MutexLock lock(view_mu_);
  return view_;
}

std::vector<DeviceMemoryInfo> RouterCore::memory_report_locked() const {
  std::vector<DeviceMemoryInfo> out;
  if (!config_.memory) {
    return out;
  }
  const DeviceBytes budgets = budgets_for(last_readings_);
  DeviceBytes ours;
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      for (const auto& [device, bytes] : charges(*r)) {
        ours[device] += bytes;
      }
    }
  }
  for (const auto& d : last_readings_) {
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

std::vector<DeviceMemoryInfo> RouterCore::memory_report() const {
  MutexLock lock(mu_);
  return memory_report_locked();
}

Error pinned_error(const std::string& model, const std::string& room,
                   const std::vector<std::string>& pinned) {
  std::string names;
  for (const auto& p : pinned) {
    names += (names.empty() ? "'" : ", '") + p + "'";
  }
  return Error(ErrorCode::kSlotsPinned,
               "'" + model + "' can load only if pinned " +
                   (pinned.size() == 1 ? "model " : "models ") + names + " made room (" + room +
                   "); unpin (POST /internal/pin) or unload one first",
               "model");
}

Error outranked_error(const std::string& model, int priority,
                      const std::vector<std::string>& outranking) {
  std::string names;
  for (const auto& p : outranking) {
    names += (names.empty() ? "'" : ", '") + p + "'";
  }
  return Error(ErrorCode::kSlotsPinned,
               "'" + model + "' (priority " + std::to_string(priority) + ") can load only if " +
                   names +
                   ", of a higher priority, left the NPU; a load never evicts a higher priority",
               "model");
}

std::vector<SlotView> RouterCore::snapshot() const {
  // One view per model: the policy decides about models, not replicas. A
  // model counts as busy while any replica serves or anyone waits for it.
  std::vector<SlotView> views;
  views.reserve(groups_.size());
  for (const auto& [name, group] : groups_) {
    const auto& first = *group.replicas.front()->server;
    views.push_back({name, first.type(), first.device(),
                     group.in_flight() + static_cast<int>(group.line.size()), group.lru_tick(),
                     group.pinned, group.priority});
  }
  return views;
}

}  // namespace lemon
