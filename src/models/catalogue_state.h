// The catalogue's state behind ModelCatalogue (models/catalogue.h): the
// entries of each source, their name index and the lock that guards them.
// Private to src/models: catalogue.cpp reads it, catalogue_changes.cpp
// writes the files it is read from.
#pragma once

#include "lemon/core/mutex.h"
#include "lemon/models/catalogue.h"

#include <algorithm>
#include <exception>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "lemon/core/atomic_file.h"
#include "lemon/core/log.h"
#include "lemon/models/alias_book.h"
#include "lemon/models/collection_registration.h"
#include "lemon/models/extra_models.h"
#include "lemon/models/hf_cache.h"
#include "lemon/models/hub_gguf.h"
#include "lemon/models/model_files.h"
#include "lemon/models/model_names.h"
#include "lemon/models/registry_entry.h"
#include "lemon/models/user_models.h"

namespace lemon {

namespace fs = std::filesystem;

namespace catalogue_detail {

// Entries of one source in catalogue order, with a name index.
// (Named, not anonymous: ModelCatalogue::State holds it.)
struct EntryList {
  std::vector<ModelInfo> entries;
  std::unordered_map<std::string, std::size_t> index;

  void assign(std::vector<ModelInfo> list) {
    entries = std::move(list);
    index.clear();
    for (std::size_t i = 0; i < entries.size(); ++i) {
      index.emplace(entries[i].name, i);
    }
  }
  const ModelInfo* find(const std::string& name) const {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &entries[it->second];
  }
};

}  // namespace catalogue_detail

struct ModelCatalogue::State {
  explicit State(const CatalogueSources& s)
      : sources(s),
        user_file(cache_file(s, "user_models.json")),
        options_file(cache_file(s, "recipe_options.json")),
        aliases(cache_file(s, "aliases.json").string(),
                [this](std::string_view name) { return lookup_model(name).has_value(); }) {}

  // No cache dir means no user files (never a path relative to the cwd).
  static fs::path cache_file(const CatalogueSources& s, const char* name) {
    return s.cache_dir.empty() ? fs::path() : fs::path(s.cache_dir) / name;
  }

  const CatalogueSources& sources;  // the owning catalogue's; outlives State

  // Guards the entry lists and the saved options. Held only for lookups and
  // swaps; file reading and resolution happen outside it.
  Mutex mu;
  catalogue_detail::EntryList builtin LEMON_GUARDED_BY(mu);
  catalogue_detail::EntryList user LEMON_GUARDED_BY(mu);
  catalogue_detail::EntryList extra LEMON_GUARDED_BY(mu);
  nlohmann::json saved_options LEMON_GUARDED_BY(mu) = nlohmann::json::object();
  // Hub models ("org/repo:TAG") a download was asked for: known before
  // their files are (admit_hub_model).
  std::set<std::string> admitted LEMON_GUARDED_BY(mu);

  // Serializes re-reading user_models.json / recipe_options.json.
  Mutex reload_mu;
  // refresh() under reload_mu; their paths never change.
  WatchedJsonFile user_file;
  WatchedJsonFile options_file;

  // Serializes rescans of the extra models dir.
  Mutex scan_mu;
  // The extra models dir now (set_extra_models_dir changes it live).
  std::string extra_dir LEMON_GUARDED_BY(mu);

  // Serializes writes of user_models.json.
  Mutex write_mu;

  AliasBook aliases;

  // A copy of a registered entry with its saved options: recipe_options.json
  // keys them by canonical id ("builtin.X"), or, as Lemonade 9.4.1 wrote
  // them, by the name itself.
  ModelInfo with_options(const ModelInfo& entry) const LEMON_REQUIRES(mu) {
    ModelInfo info = entry;
    auto saved = saved_options.find(canonical_model_id(info));
    if (saved == saved_options.end()) {
      saved = saved_options.find(info.name);
    }
    info.saved_options =
        saved_options_for(info, saved == saved_options.end() ? nlohmann::json() : *saved, nullptr);
    if (saved != saved_options.end() && saved->is_object()) {
      auto pinned = saved->find("pinned");
      info.saved_pinned = pinned != saved->end() && pinned->is_boolean() && pinned->get<bool>();
      auto priority = saved->find("priority");
      if (priority != saved->end() && priority->is_number_integer()) {
        info.saved_priority = clamp_priority(priority->get<std::int64_t>());
      }
    }
    return info;
  }

  // Registered entry (no resolution) with its saved options, or nullopt;
  // with `builtin_only`, a built-in entry alone.
  std::optional<ModelInfo> registered(const std::string& name, bool builtin_only = false) {
    {
      MutexLock lock(mu);
      for (const auto* list : {&builtin, &user, &extra}) {
        if (const ModelInfo* found = list->find(name)) {
          return with_options(*found);
        }
        if (builtin_only) {
          return std::nullopt;
        }
      }
    }
    for (auto& info : remote_entries()) {
      if (info.name == name) {
        return std::move(info);
      }
    }
    return std::nullopt;
  }

  // CatalogueSources::remote_models, asked without `mu` held.
  std::vector<ModelInfo> remote_entries() const {
    return sources.remote_models ? sources.remote_models() : std::vector<ModelInfo>{};
  }

  // Every registered entry in catalogue order, with saved options.
  std::vector<ModelInfo> all_registered() {
    std::vector<ModelInfo> out;
    {
      MutexLock lock(mu);
      out.reserve(builtin.entries.size() + user.entries.size() + extra.entries.size());
      for (const auto* list : {&builtin, &user, &extra}) {
        for (const auto& e : list->entries) {
          out.push_back(with_options(e));
        }
      }
    }
    for (auto& info : remote_entries()) {
      if (std::none_of(out.begin(), out.end(),
                       [&info](const ModelInfo& m) { return m.name == info.name; })) {
        out.push_back(std::move(info));
      }
    }
    return out;
  }

  // Re-reads user_models.json / recipe_options.json if they changed.
  void refresh_files() {
    MutexLock reload(reload_mu);
    const bool users_changed = user_file.refresh();
    const bool options_changed = options_file.refresh();
    if (users_changed) {
      auto users = parse_user_models(user_file.value());
      MutexLock lock(mu);
      canonicalize_components(users, [&](std::string_view name) LEMON_REQUIRES(mu) {
        const ModelInfo* found = builtin.find(std::string(name));
        return found != nullptr ? std::optional<ModelInfo>(*found) : std::nullopt;
      });
      user.assign(std::move(users));
    }
    if (options_changed) {
      nlohmann::json saved = options_file.value();  // ordered -> plain object
      {
        MutexLock lock(mu);
        saved_options = saved;
      }
      report_option_problems(saved);
    }
  }

  // Logs bad recipe_options.json entries once per change of the file.
  void report_option_problems(const nlohmann::json& saved) {
    for (const auto& [name, entry] : saved.items()) {
      auto info = registered(name);
      if (!info) {
        logger("models")->debug("recipe_options.json: '{}' is not a known model", name);
        continue;
      }
      std::vector<std::string> problems;
      (void)saved_options_for(*info, entry, &problems);
      for (const auto& p : problems) {
        logger("models")->warn("recipe_options.json: '{}': {} (ignored)", name, p);
      }
    }
  }

  std::string extra_models_dir() {
    MutexLock lock(mu);
    return extra_dir;
  }

  // Scans the extra models dir (`dir` from now on, when given) into the
  // extra entries; none without a dir.
  void rescan_extra(const std::optional<std::string>& dir = std::nullopt) {
    MutexLock scan(scan_mu);
    std::string now;
    {
      MutexLock lock(mu);
      extra_dir = dir.value_or(extra_dir);
      now = extra_dir;
    }
    auto found = now.empty() ? std::vector<ModelInfo>{} : scan_extra_models_dir(now);
    MutexLock lock(mu);
    extra.assign(std::move(found));
  }

  // The registered entry a client's name stands for (model_names.h), no
  // alias followed; an unknown name that may be a discovered one triggers
  // one rescan of the extra models dir.
  std::optional<ModelInfo> lookup_model(std::string_view name) {
    const auto candidates = name_candidates(name);
    auto first_registered = [&]() -> std::optional<ModelInfo> {
      for (const auto& c : candidates) {
        if (auto info = registered(c.name, c.builtin_only)) {
          return info;
        }
      }
      return std::nullopt;
    };
    auto info = first_registered();
    if (!info && !extra_models_dir().empty() &&
        std::any_of(candidates.begin(), candidates.end(),
                    [](const NameCandidate& c) { return c.name.starts_with(kExtraPrefix); })) {
      rescan_extra();
      info = first_registered();
    }
    return info;
  }

  // llama.cpp's names, after every name of ours and every alias: a hub
  // model "org/repo:TAG" whose file is in the hub cache (or whose download
  // was asked for). A --models-dir stem is one of our own names already
  // (name_candidates: "X" -> "extra.X.gguf", "extra.X").
  std::optional<ModelInfo> llamacpp_name(const std::string& key) {
    if (!is_hub_model_name(key)) {
      return std::nullopt;
    }
    std::optional<ModelInfo> info;
    if (auto gguf = find_hub_gguf(sources.hf_hub_cache, key)) {
      info = hub_gguf_model(*gguf);
    } else {
      MutexLock lock(mu);
      if (admitted.contains(canonical_hub_name(key))) {
        info = hub_variant_model(key);
      }
    }
    if (info) {
      MutexLock lock(mu);
      info = with_options(*info);
    }
    return info;
  }

  // The entry after the reload check: the name as lookup_model() finds it,
  // else as the alias it is (aliases.json).
  std::optional<ModelInfo> lookup(std::string_view name) {
    refresh_files();
    if (auto info = lookup_model(name)) {
      return info;
    }
    auto target = aliases.follow(name);
    if (target.ok() && target->has_value()) {
      return lookup_model(**target);
    }
    return llamacpp_name(std::string(name));
  }

  std::optional<std::vector<std::string>> flm_list() const {
    if (!sources.flm_installed) {
      return std::nullopt;
    }
    try {
      return sources.flm_installed();
    } catch (const std::exception& e) {
      logger("models")->warn("cannot list installed FLM models: {}", e.what());
      return std::nullopt;
    }
  }

  void resolve(ModelInfo& info, const std::optional<std::vector<std::string>>& flm) const {
    if (info.source == ModelSource::kExtraDir || info.is_collection()) {
      return;  // resolved by discovery; a collection by its components
    }
    ResolveContext ctx{sources.hf_hub_cache, flm};
    resolve_model_files(info, ctx);
  }
};

}  // namespace lemon
