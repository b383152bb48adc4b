#include "lemon/models/catalogue.h"
#include "lemon/core/mutex.h"

#include <algorithm>
#include <exception>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "catalogue_state.h"
#include "lemon/core/atomic_file.h"
#include "lemon/core/log.h"
#include "lemon/models/alias_book.h"
#include "lemon/models/extra_models.h"
#include "lemon/models/hf_cache.h"
#include "lemon/models/hub_gguf.h"
#include "lemon/models/model_files.h"
#include "lemon/models/model_names.h"
#include "lemon/models/registry_entry.h"
#include "lemon/models/user_models.h"

namespace lemon {

namespace {

// True while every file an extra-dir entry was discovered with is present.
bool extra_files_present(const ModelInfo& info) {
  for (const auto& [role, path] : info.resolved_paths) {
    if (hf::file_state(path) != hf::FileState::kPresent) {
      return false;
    }
  }
  return !info.resolved_paths.empty();
}

// A collection is downloaded when every component is (Lemonade 11).
void mark_collection(ModelInfo& info, const std::map<std::string, bool>& downloaded) {
  info.resolved_paths.clear();
  info.missing_paths.clear();
  for (const auto& component : info.components) {
    auto it = downloaded.find(component);
    if (it == downloaded.end() || !it->second) {
      info.missing_paths.push_back("component '" + component + "' is " +
                                   (it == downloaded.end() ? "not registered" : "not downloaded"));
    }
  }
  info.downloaded = info.missing_paths.empty();
}

}  // namespace
ModelCatalogue::ModelCatalogue(CatalogueSources sources)
    : sources_(std::move(sources)), state_(std::make_unique<State>(sources_)) {}

ModelCatalogue::~ModelCatalogue() = default;

Result<std::unique_ptr<ModelCatalogue>> ModelCatalogue::open(CatalogueSources sources) {
  auto builtin = read_server_models(sources.server_models_json);
  if (!builtin.ok()) {
    return std::move(builtin).error();
  }
  std::unique_ptr<ModelCatalogue> cat(new ModelCatalogue(std::move(sources)));
  State& s = *cat->state_;
  {
    MutexLock lock(s.mu);  // no other thread sees the catalogue yet
    s.builtin.assign(std::move(builtin).value());
    s.extra_dir = cat->sources_.extra_models_dir;
  }
  s.refresh_files();
  s.rescan_extra();
  if (Status migrated = cat->migrate_saved_options(); !migrated.ok()) {
    logger("models")->warn("recipe_options.json not migrated to canonical ids: {}",
                           migrated.error().message());
  }
  MutexLock lock(s.mu);
  logger("models")->info("catalogue: {} built-in, {} user, {} extra models",
                         s.builtin.entries.size(), s.user.entries.size(), s.extra.entries.size());
  return cat;
}

std::optional<ModelInfo> ModelCatalogue::find(std::string_view name) const {
  auto info = state_->lookup(name);
  if (info) {
    info->resolved_paths.clear();
    info->missing_paths.clear();
    info->downloaded = false;
  }
  return info;
}

Result<ModelInfo> ModelCatalogue::resolve(std::string_view name) const {
  State& s = *state_;
  auto info = s.lookup(name);
  if (info && info->source == ModelSource::kExtraDir && !extra_files_present(*info)) {
    // The files moved or vanished since the last scan.
    s.rescan_extra();
    info = s.registered(info->name);
  }
  if (!info) {
    return Error(ErrorCode::kModelNotFound, "model '" + std::string(name) + "' not found", "model");
  }
  if (info->is_collection()) {
    std::map<std::string, bool> downloaded;
    for (const auto& component : info->components) {
      auto c = s.lookup(component);
      if (c) {
        s.resolve(*c, c->recipe == "flm" ? s.flm_list() : std::nullopt);
      }
      downloaded[component] = c && c->downloaded;
    }
    mark_collection(*info, downloaded);
    return std::move(*info);
  }
  s.resolve(*info, info->recipe == "flm" ? s.flm_list() : std::nullopt);
  return std::move(*info);
}

std::vector<ModelInfo> ModelCatalogue::list(bool include_not_downloaded) const {
  State& s = *state_;
  s.refresh_files();
  s.rescan_extra();
  auto entries = s.all_registered();
  std::optional<std::vector<std::string>> flm;
  bool flm_asked = false;
  std::vector<ModelInfo> out;
  out.reserve(entries.size());
  std::map<std::string, bool> downloaded;
  for (auto& info : entries) {
    if (info.recipe == "flm" && !flm_asked) {
      flm = s.flm_list();  // once per listing: it may run `flm list`
      flm_asked = true;
    }
    s.resolve(info, flm);
    downloaded[info.name] = info.downloaded;
  }
  for (auto& info : entries) {
    if (info.is_collection()) {
      mark_collection(info, downloaded);  // its components are never collections
    }
    if (include_not_downloaded || info.downloaded) {
      out.push_back(std::move(info));
    }
  }
  return out;
}

void ModelCatalogue::set_extra_models_dir(const std::string& dir) {
  state_->rescan_extra(dir);
}

std::vector<ModelInfo> ModelCatalogue::registered() const {
  State& s = *state_;
  s.refresh_files();
  s.rescan_extra();
  return s.all_registered();
}

std::vector<ModelInfo> ModelCatalogue::collections() const {
  State& s = *state_;
  s.refresh_files();
  std::vector<ModelInfo> out;
  MutexLock lock(s.mu);
  for (const auto& e : s.user.entries) {
    if (e.is_collection()) {
      out.push_back(e);
    }
  }
  return out;
}

std::vector<std::string> ModelCatalogue::some_available_names(std::size_t n) const {
  std::vector<std::string> names;
  if (n == 0) {
    return names;
  }
  for (const auto& info : list(/*include_not_downloaded=*/false)) {
    names.push_back(info.name);
    if (names.size() >= n) {
      break;
    }
  }
  return names;
}

}  // namespace lemon
