#include "lemon/models/catalogue.h"
#include "lemon/core/mutex.h"

#include <algorithm>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "lemon/core/atomic_file.h"
#include "lemon/core/log.h"
#include "lemon/models/extra_models.h"
#include "lemon/models/hf_cache.h"
#include "lemon/models/hub_gguf.h"
#include "lemon/models/model_files.h"
#include "lemon/models/registry_entry.h"
#include "lemon/models/user_models.h"

namespace lemon {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kExtraPrefix = "extra.";

Result<std::vector<ModelInfo>> read_server_models(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Error(ErrorCode::kInvalidOption, "cannot read the model catalogue " + path);
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kInvalidOption,
                 "the model catalogue " + path + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) {
    return Error(ErrorCode::kInvalidOption,
                 "the model catalogue " + path + " must be a JSON object keyed by model name");
  }
  std::vector<ModelInfo> out;
  for (const auto& [name, entry] : j.items()) {
    auto info = parse_registry_entry(name, entry, ModelSource::kBuiltIn);
    if (!info.ok()) {
      return Error(ErrorCode::kInvalidOption,
                   "the model catalogue " + path + " is malformed: " + info.error().message());
    }
    out.push_back(std::move(info).value());
  }
  return out;
}

// True while every file an extra-dir entry was discovered with is present.
bool extra_files_present(const ModelInfo& info) {
  for (const auto& [role, path] : info.resolved_paths) {
    if (hf::file_state(path) != hf::FileState::kPresent) {
      return false;
    }
  }
  return !info.resolved_paths.empty();
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
        options_file(cache_file(s, "recipe_options.json")) {}

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

  // Serializes writes of user_models.json.
  Mutex write_mu;

  // A copy of a registered entry with its saved options.
  ModelInfo with_options(const ModelInfo& entry) const LEMON_REQUIRES(mu) {
    ModelInfo info = entry;
    auto saved = saved_options.find(info.name);
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

  // Registered entry (no resolution) with its saved options, or nullopt.
  std::optional<ModelInfo> registered(const std::string& name) {
    {
      MutexLock lock(mu);
      for (const auto* list : {&builtin, &user, &extra}) {
        if (const ModelInfo* found = list->find(name)) {
          return with_options(*found);
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

  void rescan_extra() {
    if (sources.extra_models_dir.empty()) {
      return;
    }
    MutexLock scan(scan_mu);
    auto found = scan_extra_models_dir(sources.extra_models_dir);
    MutexLock lock(mu);
    extra.assign(std::move(found));
  }

  // Registered entry after the reload check; an unknown "extra." name
  // triggers one rescan of the extra models dir. A name found nowhere is
  // tried as llama.cpp names models (llamacpp_name).
  std::optional<ModelInfo> lookup(std::string_view name) {
    refresh_files();
    const std::string key(name);
    auto info = registered(key);
    if (!info && key.starts_with(kExtraPrefix)) {
      rescan_extra();
      info = registered(key);
    }
    if (!info) {
      info = llamacpp_name(key);
    }
    return info;
  }

  // llama.cpp's names, after every name of ours: a --models-dir file's stem
  // ("X" for extra.X.gguf) or folder, then a hub model "org/repo:TAG" whose
  // file is in the hub cache (or whose download was asked for).
  std::optional<ModelInfo> llamacpp_name(const std::string& key) {
    if (!sources.extra_models_dir.empty() && key.find('/') == std::string::npos) {
      for (int pass = 0; pass < 2; ++pass) {
        for (const std::string& extra_name : {std::string(kExtraPrefix) + key + ".gguf",
                                              std::string(kExtraPrefix) + key}) {
          if (auto found = registered(extra_name)) {
            return found;
          }
        }
        if (pass == 0) {
          rescan_extra();
        }
      }
    }
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
    if (info.source == ModelSource::kExtraDir) {
      return;  // resolved by discovery
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
  }
  s.refresh_files();
  s.rescan_extra();
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
    info = s.registered(std::string(name));
  }
  if (!info) {
    return Error(ErrorCode::kModelNotFound, "model '" + std::string(name) + "' not found", "model");
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
  for (auto& info : entries) {
    if (info.recipe == "flm" && !flm_asked) {
      flm = s.flm_list();  // once per listing: it may run `flm list`
      flm_asked = true;
    }
    s.resolve(info, flm);
    if (include_not_downloaded || info.downloaded) {
      out.push_back(std::move(info));
    }
  }
  return out;
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
  MutexLock write(s.write_mu);
  auto file = read_json_object_for_update(s.options_file.path());
  if (!file.ok()) {
    return std::move(file).error();
  }
  (*file)[name] = nlohmann::ordered_json(options);
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

std::vector<ModelInfo> ModelCatalogue::hub_models() const {
  std::vector<ModelInfo> out;
  for (const auto& gguf : list_hub_ggufs(sources_.hf_hub_cache)) {
    out.push_back(hub_gguf_model(gguf));
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
