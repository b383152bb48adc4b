// LiveSettings: the settings in force, which a configuration reload
// replaces (Router::apply_live_settings): the slot limits, keep-alive, the
// pool's timers, fairness' bound, the default models' delay, the CLI layer
// of load options and the memory budget. Every part reads them here, as an
// immutable snapshot, when it decides.
//
// Thread-safety: every method from any thread; its lock is a leaf.
#pragma once

#include <cstdint>
#include <memory>

#include "lemon/core/mutex.h"
#include "lemon/router/pool_policy.h"
#include "lemon/router/router.h"

namespace lemon {

struct SettingsInForce {
  LiveRouterSettings values;
  // Moves on with each reload that changes values.cli_options: a server
  // made with an older one is checked by the housekeeper (and reloaded
  // once idle when its effective options differ).
  std::uint64_t cli_generation = 0;
  // The memory budget in force (values.memory_budget, else the
  // configuration's).
  BudgetRule budget;

  PoolPolicy pool_policy() const {
    return PoolPolicy{values.scale_up_after, values.scale_down_after, values.keep_alive};
  }
};

class LiveSettings {
 public:
  explicit LiveSettings(const RouterConfig& config);

  std::shared_ptr<const SettingsInForce> now() const LEMON_EXCLUDES(mu_);
  // Takes `settings` from now on. Without a memory budget in `settings`,
  // the one in force stays (turning the budget on or off needs a restart).
  void apply(const LiveRouterSettings& settings) LEMON_EXCLUDES(mu_);

 private:
  const BudgetRule configured_budget_;
  mutable Mutex mu_;
  std::shared_ptr<const SettingsInForce> now_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon
