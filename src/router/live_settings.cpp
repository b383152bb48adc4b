#include "live_settings.h"

namespace lemon {

LiveSettings::LiveSettings(const RouterConfig& config) : configured_budget_(config.memory_budget) {
  auto first = std::make_shared<SettingsInForce>();
  first->values = LiveRouterSettings::of(config);
  first->budget = first->values.memory_budget.value_or(configured_budget_);
  MutexLock lock(mu_);
  now_ = std::move(first);
}

std::shared_ptr<const SettingsInForce> LiveSettings::now() const {
  MutexLock lock(mu_);
  return now_;
}

void LiveSettings::apply(const LiveRouterSettings& settings) {
  MutexLock lock(mu_);
  auto next = std::make_shared<SettingsInForce>();
  next->values = settings;
  next->cli_generation = now_->cli_generation;
  if (!(settings.cli_options == now_->values.cli_options)) {
    ++next->cli_generation;
  }
  if (!next->values.memory_budget) {  // off now, or never on: what is in force stays
    next->values.memory_budget = now_->values.memory_budget;
    next->values.memory_margin = now_->values.memory_margin;
  }
  next->budget = next->values.memory_budget.value_or(configured_budget_);
  now_ = std::move(next);
}

}  // namespace lemon
