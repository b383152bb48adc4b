// DefaultModels: the default models (RouterConfig::default_models) that are
// not loaded and want to come back. Each starts absent (loaded at start);
// an eviction for another model's load makes one absent again (displaced(),
// only when all its replicas go); publishing its server takes it out
// (back()); one whose own load fails, that cannot be made, or that is being
// deleted is not tried again. The housekeeper asks due() which to load now
// (defaults_to_load, a pure function) and queues those loads.
//
// Thread-safety: every method from any thread; its lock is a leaf.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"
#include "lemon/router/default_model_policy.h"
#include "table_snapshot.h"

namespace lemon {

class DefaultModels {
 public:
  explicit DefaultModels(std::vector<std::string> models);

  bool any_absent() const LEMON_EXCLUDES(mu_);
  // `victims` leave `table` for the load of `displacer`: the defaults among
  // them (all of whose replicas go) want to come back. A default's own load
  // displaces nothing that comes back (two defaults never take turns).
  void displaced(const TableSnapshot& table,
                 const std::vector<std::shared_ptr<ServerSlot>>& victims,
                 const std::string& displacer) LEMON_EXCLUDES(mu_);
  // `model`'s server was published: it is back.
  void back(const std::string& model) LEMON_EXCLUDES(mu_);
  // Its default load failed: not tried again.
  void failed(const std::string& model, const Error& error) LEMON_EXCLUDES(mu_);
  // Not tried again (it cannot be made, or is being deleted).
  void forget(const std::string& model) LEMON_EXCLUDES(mu_);
  // The absent defaults to load now, marked as loading.
  std::vector<std::string> due(const TableSnapshot& table, DefaultClock::time_point now,
                               std::chrono::milliseconds delay, bool loads_pending)
      LEMON_EXCLUDES(mu_);

 private:
  bool is_default(const std::string& model) const;

  const std::vector<std::string> models_;
  mutable Mutex mu_;
  std::map<std::string, AbsentDefault> absent_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon
