#include "lemon/inference/model_provisioner.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "lemon/backends/backend_release.h"
#include "lemon/backends/binary_locator.h"
#include "lemon/backends/server_factory.h"
#include "lemon/models/collection_registration.h"
#include "lemon/models/preset.h"

namespace lemon::inference {

ModelProvisioner::ModelProvisioner(ModelCatalogue& catalogue, const PresetCatalogue& presets,
                                   ModelStore& store, BackendInstaller& installer, Router& router,
                                   BinarySettings binaries)
    : catalogue_(catalogue),
      presets_(presets),
      store_(store),
      installer_(installer),
      router_(router),
      binaries_(std::move(binaries)) {}

Result<ModelProvisioner::PresetApplied> ModelProvisioner::apply_preset(std::string& model,
                                                                       nlohmann::json* body,
                                                                       ApiRoute route) const {
  auto entry = presets_.for_request(model);
  if (!entry.ok()) {
    return std::move(entry).error();
  }
  PresetApplied applied;
  if (!*entry) {
    return applied;
  }
  applied.preset = (*entry)->preset.id;
  model = (*entry)->server;
  const bool generates = route == ApiRoute::kChatCompletions || route == ApiRoute::kCompletions ||
                         route == ApiRoute::kResponses;
  if (generates && body != nullptr) {
    bool enforced_changed = false;
    applied.enforced = enforce_preset((*entry)->preset, *body, &enforced_changed);
    const bool filled = apply_preset_defaults((*entry)->preset, *body);
    applied.body_changed = enforced_changed || filled;
  }
  return applied;
}

Result<Lease> ModelProvisioner::acquire(std::string_view model, const WaitHooks& hooks,
                                        std::optional<ModelType> required,
                                        std::optional<KeepAlive> keep_alive) {
  // The router checks the model's type (before loading anything) and leases
  // a loaded model without touching the catalogue.
  std::optional<Lease> lease;
  Status got = provision(model, RecipeOptions{}, hooks, [&]() -> Status {
    auto acquired = router_.acquire(model, hooks, required, keep_alive);
    if (!acquired.ok()) {
      return std::move(acquired).error();
    }
    lease.emplace(std::move(acquired).value());
    return ok_status();
  });
  if (!got.ok()) {
    return std::move(got).error();
  }
  return std::move(*lease);
}

Status ModelProvisioner::load(std::string_view model, const RecipeOptions& options,
                              const WaitHooks& hooks, const LoadStanding& standing) {
  return provision(model, options, hooks,
                   [&] { return router_.load(model, options, hooks, standing); });
}

Status ModelProvisioner::provision(std::string_view model, const RecipeOptions& options,
                                   const WaitHooks& hooks, const std::function<Status()>& attempt) {
  Status result = attempt();
  if (result.ok()) {
    return result;  // the common case: no preset lookup on the request path
  }
  // A preset's server downloads and installs what its base model needs.
  const std::vector<std::string> needed = presets_.catalogue_names(model);
  const std::string& base = needed.front();
  if (result.error().code() == ErrorCode::kModelFilesMissing) {
    DownloadWait wait;
    wait.cancelled = hooks.cancelled;
    wait.on_tick = hooks.on_tick;
    wait.tick_interval = hooks.tick_interval;
    for (const auto& name : needed) {  // the base model, then a preset's draft
      if (Status fetched = store_.ensure_downloaded(name, wait); !fetched.ok()) {
        return fetched;
      }
    }
    result = attempt();
  }
  if (!result.ok() && result.error().code() == ErrorCode::kBackendBinaryMissing) {
    Status installed = install_backend_for(base, options, hooks);
    if (installed.ok()) {
      result = attempt();
    } else if (installed.error().code() != ErrorCode::kUnsupportedOperation) {
      return installed;  // kUnsupportedOperation: the load's own error says more
    }
  }
  return result;
}

Status ModelProvisioner::install_backend_for(std::string_view model, const RecipeOptions& options,
                                             const WaitHooks& hooks) {
  auto info = catalogue_.find(model);
  if (!info) {
    return Error(ErrorCode::kUnsupportedOperation, "unknown model");
  }
  RecipeOptions effective = options.inherit(info->saved_options)
                                .inherit(router_.cli_options())
                                .restricted_to(info->recipe);
  const std::string backend = backend_for(info->recipe, effective);
  // A LEMONADE_<RECIPE>_<BACKEND>_BIN the user set (or its *_bin key in
  // config.json) is their choice, even when it points nowhere: report
  // that, never install over it.
  BinaryQuery query{info->recipe, info->recipe == "flm" ? "" : backend,
                    backend_executable(info->recipe)};
  const std::string var = binary_env_var(query);
  if (const char* set = std::getenv(var.c_str());
      (set != nullptr && *set != '\0') || binaries_.paths.contains(var)) {
    return Error(ErrorCode::kUnsupportedOperation, var + " is set");
  }
  download::FollowHooks follow;
  follow.cancelled = hooks.cancelled;
  follow.on_tick = hooks.on_tick;
  follow.tick_interval = hooks.tick_interval;
  return installer_.ensure_installed(info->recipe, backend, follow);
}

bool ModelProvisioner::takes_images(std::string_view model) const {
  auto info = catalogue_.find(model);
  return !info || model_has_vision(*info);
}

bool ModelProvisioner::needs_load(std::string_view model) const {
  const auto view = router_.view();
  for (const auto& s : view->servers) {
    if (s.info.model_name == model) {
      return false;
    }
  }
  if (std::find(view->loading.begin(), view->loading.end(), model) != view->loading.end()) {
    return false;
  }
  if (auto info = catalogue_.find(model)) {
    return info->recipe != "remote";
  }
  // A preset's server ("<base>~<hex>") is no catalogue name; an unknown
  // name fails as not found when it is asked for.
  return model.find('~') != std::string_view::npos;
}

Error ModelProvisioner::model_not_found(std::string_view name) const {
  std::string message = "model '" + std::string(name) + "' was not found";
  auto some = catalogue_.some_available_names(3);
  for (std::size_t i = 0; i < some.size(); ++i) {
    message += (i == 0 ? "; available models include " : ", ") + some[i];
  }
  message += ". See GET /api/v1/models?show_all=true";
  return Error(ErrorCode::kModelNotFound, message, "model");
}

Status ModelProvisioner::remove(const std::string& asked) {
  auto info = catalogue_.find(asked);
  if (!info) {
    return model_not_found(asked);
  }
  const std::string& name = info->name;
  if (auto users = collections_using(catalogue_.collections(), info->name); !users.empty()) {
    std::string names;
    for (const auto& c : users) {
      names += (names.empty() ? "'" : ", '") + c + "'";
    }
    return Error(ErrorCode::kModelInUse,
                 "model '" + name + "' is a component of " + names +
                     ": delete the collection first, or register it without this model",
                 "model_name");
  }
  if (info->recipe == "remote") {
    // No files here: deleting it takes back its registration, if
    // user_models.json holds it.
    if (info->remote.is_object() && info->remote.contains("origin")) {
      return Error(ErrorCode::kServedRemotely,
                   "model '" + name + "' comes from " + info->remote["origin"].get<std::string>() +
                       " (remote models): change it there",
                   "model_name");
    }
    return catalogue_.remove_user_model(name.substr(name.starts_with("user.") ? 5 : 0));
  }
  if (info->is_collection()) {
    // No files of its own: its registration goes; its components stay.
    return catalogue_.remove_user_model(name.substr(name.starts_with("user.") ? 5 : 0));
  }
  if (store_.downloading(name)) {
    return Error(ErrorCode::kConflict,
                 "model '" + name + "' is downloading; delete it when the pull ends", "model_name");
  }
  // No new loads while the files go; a loaded server drains, then stops.
  auto block = router_.block_loads(name);
  if (Status unloaded = router_.unload(name);
      !unloaded.ok() && unloaded.error().code() != ErrorCode::kModelNotLoaded) {
    return unloaded;
  }
  const bool is_user = name.starts_with("user.");
  router_.forget_saved_slots(name);  // the slots the unload just saved go too
  Status removed = store_.remove_files(name);
  if (!removed.ok()) {
    // A user model's registration goes even when it has no files to delete.
    const bool nothing_to_delete = removed.error().code() == ErrorCode::kModelFilesMissing ||
                                   removed.error().code() == ErrorCode::kUnsupportedOperation;
    if (!is_user || !nothing_to_delete) {
      return removed;
    }
  }
  if (is_user) {
    return catalogue_.remove_user_model(name.substr(5));
  }
  return ok_status();
}

}  // namespace lemon::inference
