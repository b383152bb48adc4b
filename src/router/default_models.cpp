#include "default_models.h"

#include <algorithm>

#include "lemon/core/log.h"

namespace lemon {

DefaultModels::DefaultModels(std::vector<std::string> models) : models_(std::move(models)) {
  MutexLock lock(mu_);
  for (const auto& name : models_) {
    absent_[name] = AbsentDefault{name, std::nullopt, {}, {}, false};
  }
}

bool DefaultModels::is_default(const std::string& model) const {
  return std::find(models_.begin(), models_.end(), model) != models_.end();
}

bool DefaultModels::any_absent() const {
  MutexLock lock(mu_);
  return !absent_.empty();
}

void DefaultModels::displaced(const TableSnapshot& table,
                              const std::vector<std::shared_ptr<ServerSlot>>& victims,
                              const std::string& displacer) {
  if (is_default(displacer)) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  std::map<std::string, std::size_t> leaving;  // a default's replicas this stop takes
  for (const auto& g : table.groups) {
    if (!is_default(g.model)) {
      continue;
    }
    for (const auto& r : g.replicas) {
      if (!r.retiring && std::find(victims.begin(), victims.end(), r.slot) != victims.end()) {
        ++leaving[g.model];
      }
    }
  }
  MutexLock lock(mu_);
  for (const auto& [model, count] : leaving) {
    const GroupState* g = table.find(model);
    if (model == displacer || g == nullptr || g->replicas.size() != count) {
      continue;  // a reload, or only some replicas go: it stays loaded
    }
    absent_[model] = AbsentDefault{model, g->first().type(), now, displacer, false};
  }
}

void DefaultModels::back(const std::string& model) {
  MutexLock lock(mu_);
  absent_.erase(model);
}

void DefaultModels::failed(const std::string& model, const Error& error) {
  MutexLock lock(mu_);
  if (auto d = absent_.find(model); d != absent_.end()) {
    logger("router")->warn("default model '{}' did not load ({}); it is not tried again", model,
                           error.message());
    absent_.erase(d);
  }
}

void DefaultModels::forget(const std::string& model) {
  MutexLock lock(mu_);
  absent_.erase(model);
}

std::vector<std::string> DefaultModels::due(const TableSnapshot& table,
                                            DefaultClock::time_point now,
                                            std::chrono::milliseconds delay, bool loads_pending) {
  std::vector<ServerActivity> servers;
  for (const auto& g : table.groups) {
    for (const auto& r : g.replicas) {
      servers.push_back({g.model, r.slot->server->type(), r.in_flight + g.waiting, r.idle_since});
    }
  }
  MutexLock lock(mu_);
  std::vector<AbsentDefault> absent;
  for (const auto& [name, d] : absent_) {
    if (table.find(name) == nullptr) {
      absent.push_back(d);
    }
  }
  auto names = defaults_to_load(absent, servers, now, delay, loads_pending);
  for (const auto& name : names) {
    absent_[name].loading = true;
  }
  return names;
}

}  // namespace lemon
