// GenerationDefaults: sampling defaults set with POST /params (Lemonade 9.4.1
// registers the route but stores nothing), filled into chat, completions and
// responses requests that leave them out.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"

namespace lemon::inference {

class GenerationDefaults {
 public:
  // Merges `changes` (null removes a key); kInvalidRequest naming a bad
  // field. Returns the whole set after the change.
  Result<nlohmann::json> update(const nlohmann::json& changes);
  nlohmann::json get() const;
  // Sets every default `body` lacks; true if it changed anything.
  bool apply(nlohmann::json& body) const;

 private:
  mutable Mutex mu_;
  nlohmann::json values_ LEMON_GUARDED_BY(mu_) = nlohmann::json::object();
  std::atomic<bool> any_{false};
};

}  // namespace lemon::inference
