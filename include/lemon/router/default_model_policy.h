// When a default model comes back (llama-swap #413): a model
// named by --default-model is loaded at start and, after another model
// displaced it (an eviction for that model's load), loaded again once every
// server of its type, and the model that displaced it, have been idle for
// --default-model-delay, and no other load is under way (so two models
// never take turns evicting each other). A pure function over a snapshot,
// with injected time.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "lemon/core/model_types.h"

namespace lemon {

using DefaultClock = std::chrono::steady_clock;

// A default model that is not loaded and wants to come back.
struct AbsentDefault {
  std::string model;
  // Its type, once it was loaded; nullopt before its first load (at start,
  // it loads at once, whatever else is loaded).
  std::optional<ModelType> type;
  DefaultClock::time_point gone_since{};  // when it was displaced
  std::string displaced_by;               // the model whose load displaced it
  bool loading = false;                   // a load of it is queued or running
};

// A loaded server as this rule sees it.
struct ServerActivity {
  std::string model;
  ModelType type = ModelType::kLlm;
  int busy = 0;                           // requests in flight or waiting for it
  DefaultClock::time_point idle_since{};  // when it last became idle
};

// The defaults to load now: none while `loads_pending`; otherwise those
// never loaded yet, and those displaced at least `delay` ago while every
// loaded server of their type and of the model that displaced them has been
// idle for `delay`. A default already loading is skipped.
std::vector<std::string> defaults_to_load(const std::vector<AbsentDefault>& absent,
                                          const std::vector<ServerActivity>& servers,
                                          DefaultClock::time_point now,
                                          std::chrono::milliseconds delay, bool loads_pending);

}  // namespace lemon
