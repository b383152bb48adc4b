// LoadJob and LoadWaiter: one queued load and the callers waiting for it.
// Internal to src/router. Every field is guarded by Router::mu_.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemon/router/router.h"

namespace lemon {

struct Router::LoadWaiter {
  explicit LoadWaiter(bool lease) : wants_lease(lease) {}
  const bool wants_lease;  // acquire() wants a Lease; load() only the outcome
  bool done = false;
  std::optional<Error> error;
  std::shared_ptr<ServerSlot> granted;  // in_flight already counted for it
};

struct Router::LoadJob {
  std::string model;
  ModelInfo info;
  RecipeOptions options;        // effective, restricted to the recipe
  bool explicit_options = false;  // from POST /load: only joins equal options
  std::vector<std::shared_ptr<LoadWaiter>> waiters;
  bool done = false;
};

}  // namespace lemon
