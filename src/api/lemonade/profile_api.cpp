#include "lemon/api/lemonade/profile_api.h"

#include <set>

#include "lemon/core/log.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"

namespace lemon::api {

ProfileApi::ProfileApi(Router& router, inference::ModelProvisioner& provisioner, Profiles profiles,
                       std::function<bool()> stopping)
    : router_(router),
      provisioner_(provisioner),
      stopping_(std::move(stopping)),
      profiles_(std::move(profiles)) {}

void ProfileApi::set_profiles(Profiles profiles) {
  MutexLock lock(mu_);
  profiles_ = std::move(profiles);
}

std::optional<std::string> ProfileApi::active() const {
  MutexLock lock(mu_);
  return active_;
}

Result<nlohmann::json> ProfileApi::activate(const std::string& name) {
  MutexLock one_at_a_time(switch_mu_);
  WaitHooks hooks;
  hooks.cancelled = [this] { return stopping_ && stopping_(); };
  const Error stopped(ErrorCode::kShuttingDown,
                      "the router is shutting down: profile '" + name + "' was not switched to");
  Profile profile;
  {
    MutexLock lock(mu_);
    auto it = profiles_.find(name);
    if (it == profiles_.end()) {
      std::string known;
      for (const auto& [n, p] : profiles_) {
        known += (known.empty() ? "" : ", ") + n;
      }
      return Error(ErrorCode::kInvalidRequest,
                   "no profile '" + name + "' (config.json's profiles: " +
                       (known.empty() ? std::string("none") : known) + ")",
                   "name");
    }
    profile = it->second;
  }
  std::vector<LoadedModelState> loaded;
  for (const auto& s : router_.loaded()) {
    loaded.push_back({s.model_name, s.pinned});
  }
  const ProfilePlan plan = plan_profile(profile, loaded);
  nlohmann::json unloaded = nlohmann::json::array();
  nlohmann::json done = nlohmann::json::array();
  nlohmann::json failed = nlohmann::json::object();
  for (const auto& model : plan.unload) {
    if (Status s = router_.unload(model); s.ok()) {
      unloaded.push_back(model);
    } else if (s.error().code() != ErrorCode::kModelNotLoaded) {
      failed[model] = s.error().message();
    }
  }
  for (const auto& model : plan.unpin) {
    (void)router_.set_pinned(model, false);  // kModelNotLoaded: it left meanwhile
  }
  for (const auto& load : plan.load) {
    if (hooks.cancelled()) {
      return stopped;
    }
    auto options = RecipeOptions::from_json("", load.options);
    if (!options.ok()) {
      failed[load.model] = options.error().message();
      continue;
    }
    LoadStanding standing;
    standing.pinned = load.pinned;
    if (Status s = provisioner_.load(load.model, *options, hooks, standing); s.ok()) {
      done.push_back(load.model);
    } else {
      failed[load.model] = s.error().message();
    }
  }
  if (hooks.cancelled()) {
    return stopped;
  }
  // A later load can evict an earlier one (the slot limit, the memory
  // budget): what is not loaded at the end is reported.
  std::set<std::string> present;
  for (const auto& s : router_.loaded()) {
    present.insert(s.model_name);
  }
  nlohmann::json loaded_now = nlohmann::json::array();
  for (const auto& model : done) {
    if (present.contains(model.get<std::string>())) {
      loaded_now.push_back(model);
    } else {
      failed[model.get<std::string>()] =
          "loaded, then unloaded by a later load of the profile (max_loaded_models or the "
          "memory budget)";
    }
  }
  done = std::move(loaded_now);
  {
    MutexLock lock(mu_);
    active_ = name;
  }
  const bool complete = failed.empty();
  logger("api")->info("profile '{}': {} loaded, {} unloaded{}", name, done.size(), unloaded.size(),
                      complete ? "" : ", " + std::to_string(failed.size()) + " failed");
  return nlohmann::json{{"status", complete ? "success" : "partial"},
                        {"profile", name},
                        {"loaded", std::move(done)},
                        {"unloaded", std::move(unloaded)},
                        {"failed", std::move(failed)}};
}

void ProfileApi::register_routes(http::ApiRoutes& routes) {
  const auto handle = [this](net::Request& r, net::ResponseWriter& w, std::string_view) {
    auto body = http::parse_json_object(r.body);
    if (!body.ok()) {
      http::write_error(w, body.error());
      return;
    }
    auto name = http::string_field(*body, "name", true);
    if (!name.ok()) {
      http::write_error(w, name.error());
      return;
    }
    auto answer = activate(*name);
    if (!answer.ok()) {
      http::write_error(w, answer.error());
      return;
    }
    http::send_json(w, 200, *answer);
  };
  routes.route("POST", "internal/profile", RouteAccess::kJsonPost, Scope::kAdmin, handle);
  routes.root("POST", "/internal/profile", RouteAccess::kJsonPost, Scope::kAdmin, handle);
}

}  // namespace lemon::api
