#include "lemon/models/catalogue.h"
#include "lemon/core/mutex.h"

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

Status ModelCatalogue::put_user_model(const std::string& key, const nlohmann::ordered_json& entry) {
  State& s = *state_;
  if (s.user_file.path().empty()) {
    return Error(ErrorCode::kInternal, "no cache directory: cannot register user models");
  }
  MutexLock write(s.write_mu);
  auto file = read_json_object_for_update(s.user_file.path());
  if (!file.ok()) {
    return std::move(file).error();
  }
  (*file)[key] = entry;
  Status written = write_file_atomically(s.user_file.path(), file->dump(2) + "\n");
  s.refresh_files();
  return written;
}

Status ModelCatalogue::remove_user_model(const std::string& key) {
  State& s = *state_;
  if (s.user_file.path().empty()) {
    return ok_status();
  }
  MutexLock write(s.write_mu);
  auto file = read_json_object_for_update(s.user_file.path());
  if (!file.ok()) {
    return std::move(file).error();
  }
  if (file->erase(key) == 0) {
    return ok_status();
  }
  Status written = write_file_atomically(s.user_file.path(), file->dump(2) + "\n");
  s.refresh_files();
  return written;
}

Status ModelCatalogue::save_options(const std::string& name, const nlohmann::json& options) {
  State& s = *state_;
  if (s.options_file.path().empty()) {
    return Error(ErrorCode::kInternal, "no cache directory: cannot save load options");
  }
  // Under the model's canonical id, as Lemonade 11 keys the file; a key of
  // the same model in 9.4.1's form goes, so that one entry holds its options.
  s.refresh_files();
  auto info = s.lookup(name);
  const std::string key = info ? canonical_model_id(*info) : name;
  MutexLock write(s.write_mu);
  auto file = read_json_object_for_update(s.options_file.path());
  if (!file.ok()) {
    return std::move(file).error();
  }
  if (info && info->name != key) {
    file->erase(info->name);
  }
  (*file)[key] = nlohmann::ordered_json(options);
  Status written = write_file_atomically(s.options_file.path(), file->dump(2) + "\n");
  s.refresh_files();
  return written;
}

Result<std::string> ModelCatalogue::admit_hub_model(std::string_view name) {
  if (!is_hub_model_name(name)) {
    return Error(ErrorCode::kInvalidRequest,
                 "'" + std::string(name) + "' is not a hub model: expected 'owner/repo[:TAG]'",
                 "model");
  }
  std::string canonical = canonical_hub_name(name);
  MutexLock lock(state_->mu);
  state_->admitted.insert(canonical);
  return canonical;
}

nlohmann::json ModelCatalogue::saved_entry(std::string_view name) const {
  State& s = *state_;
  auto info = s.lookup(name);
  if (!info) {
    return nlohmann::json::object();
  }
  MutexLock lock(s.mu);
  for (const std::string& key : {canonical_model_id(*info), info->name}) {
    if (auto it = s.saved_options.find(key); it != s.saved_options.end() && it->is_object()) {
      return *it;
    }
  }
  return nlohmann::json::object();
}

Status ModelCatalogue::forget_options(std::string_view name) {
  State& s = *state_;
  auto info = s.lookup(name);
  if (!info || s.options_file.path().empty()) {
    return ok_status();
  }
  MutexLock write(s.write_mu);
  auto file = read_json_object_for_update(s.options_file.path());
  if (!file.ok()) {
    return std::move(file).error();
  }
  const bool erased = file->erase(canonical_model_id(*info)) + file->erase(info->name) > 0;
  if (!erased) {
    return ok_status();
  }
  Status written = write_file_atomically(s.options_file.path(), file->dump(2) + "\n");
  s.refresh_files();
  return written;
}

std::optional<std::string> ModelCatalogue::internal_name(std::string_view name) const {
  auto info = state_->lookup(name);
  if (!info || info->name == name) {
    return std::nullopt;
  }
  return std::move(info->name);
}

std::string ModelCatalogue::public_id(const ModelInfo& info) const {
  State& s = *state_;
  bool builtin_named = false;
  if (info.name.starts_with(kUserPrefix)) {
    MutexLock lock(s.mu);
    builtin_named = s.builtin.find(info.name.substr(kUserPrefix.size())) != nullptr;
  }
  return public_model_id(info, builtin_named);
}

std::string ModelCatalogue::public_id_of(std::string_view internal) const {
  if (!internal.starts_with(kUserPrefix)) {
    return std::string(internal);
  }
  State& s = *state_;
  MutexLock lock(s.mu);
  const std::string bare(internal.substr(kUserPrefix.size()));
  return s.builtin.find(bare) != nullptr ? std::string(internal) : bare;
}

const AliasBook& ModelCatalogue::aliases() const {
  return state_->aliases;
}

AliasBook& ModelCatalogue::aliases() {
  return state_->aliases;
}

Status ModelCatalogue::migrate_saved_options() {
  State& s = *state_;
  if (s.options_file.path().empty()) {
    return ok_status();
  }
  MutexLock write(s.write_mu);
  auto file = read_json_object_for_update(s.options_file.path());
  if (!file.ok()) {
    return std::move(file).error();
  }
  int moved = 0;
  const nlohmann::ordered_json migrated = canonical_option_keys(
      *file,
      [&s](const std::string& key) {
        MutexLock lock(s.mu);
        return s.builtin.find(key) != nullptr;
      },
      moved);
  if (moved == 0) {
    return ok_status();
  }
  // The file as Lemonade 9.4.1 wrote it stays beside the new one.
  const fs::path kept = s.options_file.path().string() + ".9.4.1";
  std::error_code ec;
  if (!fs::exists(kept, ec)) {
    std::ifstream in(s.options_file.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (Status saved = write_file_atomically(kept, text.str()); !saved.ok()) {
      return saved;
    }
  }
  Status written = write_file_atomically(s.options_file.path(), migrated.dump(2) + "\n");
  if (written.ok()) {
    logger("models")->info(
        "recipe_options.json: {} built-in model keys moved to their canonical "
        "ids (builtin.<name>); the old file is kept as {}",
        moved, kept.string());
  }
  s.refresh_files();
  return written;
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
