// Profiles (docs/configuration.md "Profiles"): named sets of
// models to have loaded, some pinned, with their load options, declared in
// config.json's `profiles` section and switched to with
// POST /internal/profile or --profile. What a switch does is decided here,
// from a snapshot of what is loaded: a pure function, tested without a
// router (the effects are api/lemonade/profile_api).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon {

struct Profile {
  std::vector<std::string> models;                // loaded by the switch, in this order
  std::vector<std::string> pinned;                // of those, the ones pinned
  std::map<std::string, nlohmann::json> options;  // load options by model (recipe options)
};
using Profiles = std::map<std::string, Profile>;

// The `profiles` section: {name: {models: [...], pinned: [...], options:
// {model: {...}}}}. kInvalidRequest naming the JSON path
// ("profiles.work.pinned[0]: ...") of the first mistake: an unknown field, a
// wrong type, a pinned model or an options entry not among `models`.
Result<Profiles> parse_profiles(const nlohmann::json& section);

// A model as the switch sees it: loaded, and pinned or not.
struct LoadedModelState {
  std::string name;
  bool pinned = false;
};

struct ProfilePlan {
  std::vector<std::string> unload;  // loaded and not in the profile (first, to free room)
  std::vector<std::string> unpin;   // loaded, in the profile, pinned, and not among its pins
  struct Load {
    std::string model;
    bool pinned = false;
    nlohmann::json options = nlohmann::json::object();
  };
  std::vector<Load> load;  // every model of the profile (a loaded one stays, or reloads if its
                           // options differ: Router::load decides)
};

ProfilePlan plan_profile(const Profile& profile, const std::vector<LoadedModelState>& loaded);

}  // namespace lemon
