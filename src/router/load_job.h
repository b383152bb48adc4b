// LoadJob and LoadWaiter: one queued load and the callers waiting for it.
// Internal to src/router.
//
// Thread-safety: what make_load_job() sets (model, info, options, the
// request's options, the CLI generation) and what the housekeeper sets
// before it queues a job (replica, default_load, options_reload,
// on_finish) never change once the job is queued. The standing (pinned,
// priority and whether they were given), the waiters, `announced`,
// `outranked_logged` and `done` are guarded by the LoadQueue's lock.
// `estimate`, `context` and `evicted_all` belong to the loader thread while it runs the
// job.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/models/catalogue.h"
#include "lemon/router/router.h"
#include "live_settings.h"

namespace lemon {

struct LoadWaiter {
  LoadWaiter(bool wants, std::optional<KeepAlive> keep) : wants_lease(wants), keep_alive(keep) {}
  const bool wants_lease;                     // acquire() wants a Lease; load() only the outcome
  const std::optional<KeepAlive> keep_alive;  // its request's, applied with the lease
  bool done = false;
  std::optional<Error> error;
  std::optional<Lease> lease;  // granted with the server's publication
  // Set instead of `lease` when the new server's slots were all taken: the
  // caller waits in its model's line with this ticket (0: none).
  std::uint64_t ticket = 0;
};

struct LoadJob {
  std::string model;
  ModelInfo info;
  RecipeOptions options;          // effective, restricted to the recipe
  bool explicit_options = false;  // from POST /load: only joins equal options
  // What POST /load gave (nullopt: an automatic load); a reload for a new
  // CLI layer keeps it.
  std::optional<RecipeOptions> request_options;
  // The CLI layer's generation its options were made with.
  std::uint64_t cli_generation = 0;
  // A scale-up: one more replica of a loaded model, with its options; it
  // evicts nothing and has no waiters (the model's line takes its slots).
  bool replica = false;
  bool default_load = false;  // queued by the housekeeper for a default model
  // Queued by the housekeeper: the model's options changed with the CLI
  // layer; kept without waiters, as a default's load is.
  bool options_reload = false;
  // Called once with the job's outcome, on the loader thread, with no lock
  // held (the housekeeper's scale-ups).
  std::function<void(const Status&)> on_finish;
  std::chrono::steady_clock::time_point queued_at = std::chrono::steady_clock::now();

  // The model's standing once loaded: its saved "pinned" and "priority",
  // what POST /load gives, or, on a reload, the loaded model's.
  bool pinned = false;
  bool pin_given = false;  // POST /load named "pinned": a reload does not keep the old pin
  int priority = 0;
  bool priority_given = false;    // POST /load named "priority"
  bool outranked_logged = false;  // its wait for a higher priority is logged
  std::vector<std::shared_ptr<LoadWaiter>> waiters;
  bool done = false;
  // Its kLoadQueued event is out: the loader starts it only then, so
  // "queued" always comes before "started" (events are sent without locks).
  bool announced = false;

  DeviceBytes estimate;  // the new server's memory estimate, once it is made
  DeviceBytes charge;    // what admission charges it (admission_charge())
  // The context chosen for it when its ctx_size asks for one fitted to
  // memory (its retries start with the same).
  std::optional<FittedContext> context;
  // This job evicted every other model for itself (the loader's own).
  bool evicted_all = false;
};

// A load of `model_name`: resolved in the catalogue (reads the disk; call
// without locks) and checked (not remote, of the `required` type,
// downloaded), its options layered request > saved > the CLI layer in
// force, restricted to its recipe.
Result<std::shared_ptr<LoadJob>> make_load_job(const ModelResolver& models,
                                               const SettingsInForce& settings,
                                               std::string_view model_name,
                                               const std::optional<RecipeOptions>& request_options,
                                               std::optional<ModelType> required = std::nullopt);

}  // namespace lemon
