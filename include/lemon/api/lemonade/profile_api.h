// ProfileApi: switching to a profile (docs/api.md
// "POST /internal/profile"): the profile's models loaded (through the
// ModelProvisioner, so a missing one is downloaded first) with its options
// and pins, and every other model unloaded, each after it drains, before
// the loads. The plan is profile_plan.h's. One switch runs at a time; the
// active profile's name is read by /health without waiting for it.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: any thread; set_profiles() replaces the definitions (a
// configuration reload).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/mutex.h"
#include "lemon/http/api_routes.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/router/profile_plan.h"
#include "lemon/router/router.h"

namespace lemon::api {

class ProfileApi {
 public:
  // `stopping` turns true when the router shuts down: a switch then stops
  // (a client that leaves does not stop it).
  ProfileApi(Router& router, inference::ModelProvisioner& provisioner, Profiles profiles,
             std::function<bool()> stopping);

  void register_routes(http::ApiRoutes& routes);

  // Switches to profile `name`: its answer ({"status": "success" or
  // "partial", "profile", "unloaded", "loaded", "failed": {model: message}}),
  // or kInvalidRequest naming the known profiles, or kShuttingDown (the
  // switch stopped; the profile is not made active).
  Result<nlohmann::json> activate(const std::string& name);
  // The active profile's name, or nullopt (none switched to yet).
  std::optional<std::string> active() const;
  void set_profiles(Profiles profiles);

 private:
  Router& router_;
  inference::ModelProvisioner& provisioner_;
  const std::function<bool()> stopping_;
  Mutex switch_mu_;  // one switch at a time (held while it loads)
  mutable Mutex mu_;
  Profiles profiles_ LEMON_GUARDED_BY(mu_);
  std::optional<std::string> active_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon::api
