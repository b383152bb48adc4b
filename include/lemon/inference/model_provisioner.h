// One path for a request's `model`: the preset it may name,
// then the router's lease or load, and, when that finds the model's files or
// its backend missing, a download or an install and one more try. Every
// handler that serves a model by name goes through here, once.
//
// Ownership: holds references to the catalogue, presets, store, installer
// and router, which outlive it. Thread-safety: every method may be called
// from any connection thread at once; waits follow the caller's WaitHooks.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "lemon/backends/backend_installer.h"
#include "lemon/backends/binary_locator.h"
#include "lemon/backends/wrapped_server.h"
#include "lemon/core/error.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/model_store.h"
#include "lemon/models/preset_catalogue.h"
#include "lemon/models/recipe_options.h"
#include "lemon/router/router.h"

namespace lemon::inference {

class ModelProvisioner {
 public:
  // A backend install follows the router's CLI layer of load options in
  // force (Router::cli_options(): the backend a model will run with).
  // `binaries`: the binary paths config.json gives; a backend one names
  // is never installed over, as with its LEMONADE_*_BIN variable.
  ModelProvisioner(ModelCatalogue& catalogue, const PresetCatalogue& presets, ModelStore& store,
                   BackendInstaller& installer, Router& router, BinarySettings binaries = {});

  // What apply_preset() did.
  struct PresetApplied {
    std::string preset;  // its id; "" when the request named no preset
    bool body_changed = false;
    PresetEnforced enforced;  // the fields `set` overrode and `strip` removed
  };
  // A request whose model names a preset ("preset.<id>", or an id of the
  // "NAME:VARIANT" form): `model` becomes the preset's server name and, on
  // chat, completions and responses, the preset's `strip` and `set` apply
  // and then its request-time values fill what `body` leaves out.
  // kModelNotFound for an unknown "preset." name. Other names: no change.
  Result<PresetApplied> apply_preset(std::string& model, nlohmann::json* body,
                                     ApiRoute route) const;

  // A lease on `model` (Router::acquire), loading it if needed.
  Result<Lease> acquire(std::string_view model, const WaitHooks& hooks,
                        std::optional<ModelType> required = std::nullopt,
                        std::optional<KeepAlive> keep_alive = std::nullopt);

  // Deletes a model: no new loads while its files go, its servers drain
  // and stop, its files are removed, and a user model's registration goes
  // too (POST /api/v1/delete, Ollama's DELETE /api/delete). kConflict while
  // it downloads; kModelInUse while a collection names it as a component.
  // A collection's delete takes its registration only.
  Status remove(const std::string& name);

  // False when `model` is in the catalogue and cannot take images (no
  // vision label, no mmproj file); true otherwise (an unknown name fails
  // later, as not found).
  bool takes_images(std::string_view model) const;

  // True when a request for `model` would start a load: it is neither
  // loaded nor loading (from the router's published view, no lock), and
  // not a remote model.
  bool needs_load(std::string_view model) const;

  // The name the catalogue keeps for a client's `name` (catalogue.h
  // internal_name), or nullopt when it is that name or unknown.
  std::optional<std::string> internal_name(std::string_view name) const {
    return presets_.internal_name(name);
  }

  // kModelNotFound for `name`, naming a few models that are available.
  Error model_not_found(std::string_view name) const;

  // Loads `model` with `options` (Router::load).
  // `standing`: Router::load's (its pin and priority as it is published).
  Status load(std::string_view model, const RecipeOptions& options, const WaitHooks& hooks,
              const LoadStanding& standing = {});

 private:
  // Runs `attempt`; when it fails because the model's files or its backend
  // are missing, downloads or installs them and runs it again.
  Status provision(std::string_view model, const RecipeOptions& options, const WaitHooks& hooks,
                   const std::function<Status()>& attempt);
  // Installs the backend `model` needs with `options` when it has no
  // executable. kUnsupportedOperation when this is not for the installer:
  // no Linux release, or the user set LEMONADE_<RECIPE>_<BACKEND>_BIN (the
  // load's own error is then reported).
  Status install_backend_for(std::string_view model, const RecipeOptions& options,
                             const WaitHooks& hooks);

  ModelCatalogue& catalogue_;
  const PresetCatalogue& presets_;
  ModelStore& store_;
  BackendInstaller& installer_;
  Router& router_;
  const BinarySettings binaries_;
};

}  // namespace lemon::inference
