// LoadJob and LoadWaiter: one queued load and the callers waiting for it.
// Internal to src/router. Every field is guarded by RouterCore::mu_.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "router_core.h"

namespace lemon {

struct RouterCore::LoadWaiter {
  explicit LoadWaiter(bool lease) : wants_lease(lease) {}
  const bool wants_lease;  // acquire() wants a Lease; load() only the outcome
  bool done = false;
  std::optional<Error> error;
  std::shared_ptr<ServerSlot> granted;  // in_flight already counted for it
  int granted_slot = -1;                // its backend slot, when one is named (grant())
  // Set instead of `granted` when the new server's slots were all taken:
  // the caller waits in its model's line with this ticket (0: none).
  std::uint64_t ticket = 0;
};

// One request counted against --max-queued-requests while it waits for a
// load or a slot. Construct and destroy with RouterCore::mu_ held.
struct RouterCore::QueuePlace {
  QueuePlace(RouterCore& router, std::string model) : router_(router), model_(std::move(model)) {
    ++router_.queued_total_;
    ++router_.queued_by_model_[model_];
    router_.republish();
  }
  ~QueuePlace() {
    --router_.queued_total_;
    auto it = router_.queued_by_model_.find(model_);
    if (it != router_.queued_by_model_.end() && --it->second == 0) {
      router_.queued_by_model_.erase(it);
    }
    router_.republish();
  }
  QueuePlace(const QueuePlace&) = delete;
  QueuePlace& operator=(const QueuePlace&) = delete;
  QueuePlace(QueuePlace&&) = delete;
  QueuePlace& operator=(QueuePlace&&) = delete;

 private:
  RouterCore& router_;
  std::string model_;
};

struct RouterCore::LoadJob {
  std::string model;
  ModelInfo info;
  RecipeOptions options;          // effective, restricted to the recipe
  bool explicit_options = false;  // from POST /load: only joins equal options
  // Pin the model once loaded: its saved "pinned", or a pinned model's
  // reload (issue #29 §3).
  bool pinned = false;
  bool pin_given = false;     // POST /load named "pinned": a reload does not keep the old pin
  bool default_load = false;  // queued by the housekeeper for a default model
  // Queued by the housekeeper: the model's options changed with the CLI
  // layer (issue #30 §1); kept without waiters, as a default's load is.
  bool options_reload = false;
  // What POST /load gave (nullopt: an automatic load); a reload for a new
  // CLI layer keeps it.
  std::optional<RecipeOptions> request_options;
  // The CLI layer's generation its options were made with.
  std::uint64_t cli_generation = 0;
  // The model's priority once loaded: its saved "priority", the one POST
  // /load gives, or, on a reload, the loaded model's (issue #29 §3).
  int priority = 0;
  bool priority_given = false;    // POST /load named "priority"
  bool outranked_logged = false;  // its wait for a higher priority is logged
  std::vector<std::shared_ptr<LoadWaiter>> waiters;
  bool done = false;
  // A scale-up: one more replica of a loaded model, with its options; it
  // evicts nothing and has no waiters (the model's line takes its slots).
  bool replica = false;
  std::chrono::steady_clock::time_point queued_at = std::chrono::steady_clock::now();
  DeviceBytes estimate;  // the new server's memory estimate, once it is made
  // Its creator has reported kLoadQueued: the loader starts it only then, so
  // "queued" always comes before "started" (events are sent without mu_).
  bool announced = false;
  // This job evicted every other model for itself (the loader's own).
  bool evicted_all = false;
};

}  // namespace lemon
