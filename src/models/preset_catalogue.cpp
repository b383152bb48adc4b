#include "lemon/models/preset_catalogue.h"
#include "lemon/core/mutex.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "lemon/core/atomic_file.h"
#include "lemon/core/log.h"
#include "lemon/models/model_files.h"
#include "lemon/models/registry_entry.h"
#include "lemon/models/user_models.h"

namespace lemon {
namespace fs = std::filesystem;
namespace {

// The valid entries of one presets file; each problem is "<file>: <what>".
std::vector<PresetEntry> parse_file(const std::string& file, const nlohmann::ordered_json& j,
                                    bool builtin, std::vector<std::string>& errors) {
  std::vector<PresetEntry> out;
  for (const auto& [id, entry] : j.items()) {
    auto preset = parse_preset(id, nlohmann::json(entry));
    if (!preset.ok()) {
      std::string problem = file;
      problem += ": preset '" + id + "': ";
      problem += preset.error().message();
      errors.push_back(std::move(problem));
      logger("models")->warn("{}", errors.back());
      continue;
    }
    PresetEntry e;
    e.server = preset->server_name();
    e.preset = std::move(preset).value();
    e.builtin = builtin;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

struct PresetCatalogue::State {
  explicit State(const PresetSources& s)
      : user_file(s.cache_dir.empty() ? fs::path() : fs::path(s.cache_dir) / "presets.json") {}

  // Guards everything below. File reads happen under it: the files are small.
  mutable Mutex mu;
  std::vector<PresetEntry> builtin;
  std::vector<std::string> builtin_errors;
  WatchedJsonFile user_file;  // refresh() under mu; its path never changes
  std::vector<PresetEntry> user LEMON_GUARDED_BY(mu);
  std::vector<std::string> user_errors LEMON_GUARDED_BY(mu);

  // Serializes writers of the user's file.
  Mutex write_mu;

  // llama-server's preset file: its presets, the error of its last reading
  // ("" : none) and the file's size and time when it was read.
  std::vector<PresetEntry> ini LEMON_GUARDED_BY(mu);
  std::string ini_error LEMON_GUARDED_BY(mu);
  Status first_reading;
  std::optional<std::pair<std::uintmax_t, fs::file_time_type>> ini_stamp LEMON_GUARDED_BY(mu);

  // Re-reads the user's file when it changed.
  void refresh_locked() LEMON_REQUIRES(mu) {
    if (user_file.path().empty() || !user_file.refresh()) {
      return;
    }
    user_errors.clear();
    const std::string file = user_file.path().string();
    if (!user_file.problem().empty()) {
      user_errors.push_back(file + ": " + user_file.problem());
    }
    user = parse_file(file, user_file.value(), false, user_errors);
    std::erase_if(user, [&](const PresetEntry& e) LEMON_REQUIRES(mu) {
      for (const auto& b : builtin) {
        if (b.preset.id == e.preset.id) {
          user_errors.push_back(file + ": preset '" + e.preset.id +
                                "' takes a built-in preset's id; ignored");
          logger("models")->warn("{}", user_errors.back());
          return true;
        }
      }
      return false;
    });
  }

  // Every entry, built-ins first.
  std::vector<PresetEntry> all_locked() const LEMON_REQUIRES(mu) {
    std::vector<PresetEntry> out = builtin;
    out.insert(out.end(), user.begin(), user.end());
    out.insert(out.end(), ini.begin(), ini.end());
    return out;
  }

  // Reads the preset file; `force`: even when its size and time are the
  // ones read before. An error keeps the presets read before.
  Status read_ini_locked(const std::string& path, bool force) LEMON_REQUIRES(mu) {
    if (path.empty()) {
      return ok_status();
    }
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    const auto time = fs::last_write_time(path, ec);
    std::optional<std::pair<std::uintmax_t, fs::file_time_type>> stamp;
    if (!ec) {
      stamp.emplace(size, time);
    }
    if (!force && stamp && stamp == ini_stamp) {
      return ok_status();
    }
    ini_stamp = stamp;
    auto read = read_llamacpp_preset_file(path);
    if (!read.ok()) {
      ini_error = read.error().message();
      logger("models")->error("{}", ini_error);
      return std::move(read).error();
    }
    ini_error.clear();
    ini.clear();
    for (auto& p : *read) {
      PresetEntry e;
      e.server = p.preset.server_name();
      e.preset = p.preset;
      e.ini = std::make_shared<const IniPreset>(std::move(p));
      ini.push_back(std::move(e));
    }
    return ok_status();
  }

  // The preset file's preset named `name` (its id or an alias), or nullptr.
  const PresetEntry* ini_named_locked(std::string_view name) const LEMON_REQUIRES(mu) {
    for (const auto& e : ini) {
      if (e.preset.id == name ||
          std::find(e.ini->aliases.begin(), e.ini->aliases.end(), name) != e.ini->aliases.end()) {
        return &e;
      }
    }
    return nullptr;
  }
};

PresetCatalogue::PresetCatalogue(const ModelCatalogue& models, PresetSources sources)
    : models_(models), sources_(std::move(sources)), state_(std::make_unique<State>(sources_)) {
  State& s = *state_;
  if (!sources_.builtin_json.empty()) {
    WatchedJsonFile file(sources_.builtin_json);
    file.refresh();
    std::error_code ec;
    if (!fs::exists(sources_.builtin_json, ec)) {
      s.builtin_errors.push_back(sources_.builtin_json + ": not found");
      logger("models")->warn("{}", s.builtin_errors.back());
    } else if (!file.problem().empty()) {
      s.builtin_errors.push_back(sources_.builtin_json + ": " + file.problem());
    }
    s.builtin = parse_file(sources_.builtin_json, file.value(), true, s.builtin_errors);
  }
  MutexLock lock(s.mu);
  s.refresh_locked();
  s.first_reading = s.read_ini_locked(sources_.llamacpp_ini, true);
  logger("models")->info("presets: {} built-in, {} user, {} from {}", s.builtin.size(),
                         s.user.size(), s.ini.size(),
                         sources_.llamacpp_ini.empty() ? "no preset file" : sources_.llamacpp_ini);
}

Status PresetCatalogue::file_status() const {
  return state_->first_reading;
}

Status PresetCatalogue::reload_file() {
  MutexLock lock(state_->mu);
  return state_->read_ini_locked(sources_.llamacpp_ini, true);
}

std::vector<PresetEntry> PresetCatalogue::file_presets() const {
  MutexLock lock(state_->mu);
  (void)state_->read_ini_locked(sources_.llamacpp_ini, false);
  return state_->ini;
}

PresetCatalogue::~PresetCatalogue() = default;

std::vector<PresetEntry> PresetCatalogue::list() const {
  MutexLock lock(state_->mu);
  state_->refresh_locked();
  (void)state_->read_ini_locked(sources_.llamacpp_ini, false);
  return state_->all_locked();
}

std::optional<PresetEntry> PresetCatalogue::find(std::string_view id) const {
  for (auto& e : list()) {
    if (e.preset.id == id) {
      return std::move(e);
    }
  }
  return std::nullopt;
}

Result<std::optional<PresetEntry>> PresetCatalogue::for_request(std::string_view model) const {
  if (!model.starts_with(kPresetPrefix)) {
    // "NAME:VARIANT" is a preset when one has that id, else the model's
    // own name (":latest", a checkpoint's variant).
    if (model.find(':') != std::string_view::npos && valid_preset_id(model)) {
      if (auto found = find(model)) {
        return found;
      }
    }
    if (sources_.llamacpp_ini.empty()) {
      return std::optional<PresetEntry>();  // the request path: no lock, no lookup
    }
    MutexLock lock(state_->mu);
    const PresetEntry* named = state_->ini_named_locked(model);
    return named != nullptr ? std::optional<PresetEntry>(*named) : std::optional<PresetEntry>();
  }
  auto found = find(model.substr(kPresetPrefix.size()));
  if (!found) {
    return Error(ErrorCode::kModelNotFound,
                 "preset '" + std::string(model.substr(kPresetPrefix.size())) +
                     "' was not found. See GET /api/v1/presets",
                 "model");
  }
  return found;
}

std::string PresetCatalogue::catalogue_name(std::string_view name) const {
  return catalogue_names(name).front();
}

std::vector<std::string> PresetCatalogue::catalogue_names(std::string_view name) const {
  if (name.find('~') == name.npos && !name.starts_with(kPresetPrefix)) {
    return {std::string(name)};
  }
  for (const auto& e : list()) {
    const bool named = e.server == name || (name.starts_with(kPresetPrefix) &&
                                            name.substr(kPresetPrefix.size()) == e.preset.id);
    if (!named) {
      continue;
    }
    std::vector<std::string> names = {
        e.preset.model_kind() == PresetModelKind::kCatalogue ? e.preset.model : std::string(name)};
    if (!e.preset.draft.empty() && e.preset.draft_kind() == PresetModelKind::kCatalogue) {
      names.push_back(e.preset.draft);
    }
    return names;
  }
  return {std::string(name)};
}

Result<ModelInfo> PresetCatalogue::server_info(const PresetEntry& entry) const {
  const Preset& p = entry.preset;
  ModelInfo info;
  if (p.model_kind() == PresetModelKind::kCatalogue) {
    auto base = models_.resolve(p.model);
    if (!base.ok()) {
      return std::move(base).error();
    }
    info = std::move(base).value();
  } else {
    // A checkpoint in the HF cache or a local file: resolved like a user
    // model registered with it.
    nlohmann::ordered_json registered = {{"checkpoint", p.model}, {"recipe", "llamacpp"}};
    if (p.model_kind() == PresetModelKind::kLocalPath) {
      registered["source"] = "local_path";
    }
    auto parsed = parse_registry_entry(entry.server, registered, ModelSource::kUser);
    if (!parsed.ok()) {
      return std::move(parsed).error();
    }
    info = std::move(parsed).value();
    resolve_model_files(info, ResolveContext{sources_.hf_hub_cache, std::nullopt});
  }
  info.name = entry.server;
  info.saved_options = p.load_options.inherit(info.saved_options).restricted_to(info.recipe);
  if (!p.draft.empty()) {
    add_draft(p, info);
  }
  return info;
}

void PresetCatalogue::add_draft(const Preset& p, ModelInfo& info) const {
  // The draft's file, resolved as the model it names would be.
  ModelInfo draft;
  if (p.draft_kind() == PresetModelKind::kCatalogue) {
    auto named = models_.resolve(p.draft);
    if (!named.ok()) {
      info.missing_paths.push_back("draft model '" + p.draft + "' (not in the catalogue)");
      info.downloaded = false;
      return;
    }
    draft = std::move(named).value();
  } else {
    nlohmann::ordered_json registered = {{"checkpoint", p.draft}, {"recipe", "llamacpp"}};
    if (p.draft_kind() == PresetModelKind::kLocalPath) {
      registered["source"] = "local_path";
    }
    auto parsed = parse_registry_entry(info.name, registered, ModelSource::kUser);
    if (!parsed.ok()) {
      info.missing_paths.push_back("draft '" + p.draft + "': " + parsed.error().message());
      info.downloaded = false;
      return;
    }
    draft = std::move(parsed).value();
    resolve_model_files(draft, ResolveContext{sources_.hf_hub_cache, std::nullopt});
  }
  info.checkpoints["draft"] = draft.checkpoint();
  info.resolved_paths.erase("draft");
  if (const std::string path = draft.resolved_path("main"); !path.empty() && draft.downloaded) {
    info.resolved_paths["draft"] = path;
    return;
  }
  for (const auto& missing : draft.missing_paths) {
    info.missing_paths.push_back(missing + " (the draft model)");
  }
  info.downloaded = false;
}

Result<ModelInfo> PresetCatalogue::resolve(std::string_view name) const {
  if (name.starts_with(kPresetPrefix) || name.find('~') != name.npos) {
    for (const auto& e : list()) {
      if (e.server == name ||
          (name.starts_with(kPresetPrefix) && name.substr(kPresetPrefix.size()) == e.preset.id)) {
        return server_info(e);
      }
    }
    if (name.starts_with(kPresetPrefix)) {
      return Error(ErrorCode::kModelNotFound, "preset '" + std::string(name) + "' not found",
                   "model");
    }
  }
  return models_.resolve(name);
}

std::optional<std::string> PresetCatalogue::internal_name(std::string_view name) const {
  if (name.starts_with(kPresetPrefix) || name.find('~') != name.npos) {
    return std::nullopt;
  }
  return models_.internal_name(name);
}

Status PresetCatalogue::check_model_exists(const Preset& preset) const {
  if (preset.model_kind() == PresetModelKind::kCatalogue && !models_.find(preset.model)) {
    return Error(ErrorCode::kInvalidRequest,
                 "preset field 'model': no model named '" + preset.model +
                     "' in the catalogue (a catalogue name, a checkpoint 'owner/repo:VARIANT' "
                     "or an absolute .gguf path)",
                 "model");
  }
  if (!preset.draft.empty() && preset.draft_kind() == PresetModelKind::kCatalogue &&
      !models_.find(preset.draft)) {
    return Error(ErrorCode::kInvalidRequest,
                 "preset field 'draft': no model named '" + preset.draft +
                     "' in the catalogue (a catalogue name, a checkpoint 'owner/repo:VARIANT' "
                     "or an absolute .gguf path)",
                 "draft");
  }
  return ok_status();
}

namespace {

// One change to the user's file under write_mu: read it (refusing a
// malformed one), apply `change`, write it atomically.
template <typename Change>
Status rewrite(const fs::path& path, const Change& change) {
  if (path.empty()) {
    return Error(ErrorCode::kInternal, "no cache directory: cannot store user presets");
  }
  auto file = read_json_object_for_update(path);
  if (!file.ok()) {
    return std::move(file).error();
  }
  if (Status changed = change(*file); !changed.ok()) {
    return changed;
  }
  return write_file_atomically(path, file->dump(2) + "\n");
}

Error unknown_preset(std::string_view id) {
  return Error(ErrorCode::kModelNotFound, "preset '" + std::string(id) + "' was not found",
               "preset");
}

Error builtin_conflict(std::string_view id, const char* what) {
  return Error(ErrorCode::kConflict,
               "preset '" + std::string(id) + "' is built in and read-only: " + what, "id");
}

}  // namespace

Status PresetCatalogue::create(const Preset& preset) {
  if (Status exists = check_model_exists(preset); !exists.ok()) {
    return exists;
  }
  State& s = *state_;
  MutexLock write(s.write_mu);
  for (const auto& b : s.builtin) {
    if (b.preset.id == preset.id) {
      return builtin_conflict(preset.id, "choose another id for a user preset");
    }
  }
  Status written = rewrite(s.user_file.path(), [&](nlohmann::ordered_json& file) -> Status {
    if (file.contains(preset.id)) {
      return Error(ErrorCode::kConflict, "preset '" + preset.id + "' already exists", "id");
    }
    file[preset.id] = preset.to_json();
    return ok_status();
  });
  MutexLock lock(s.mu);
  s.refresh_locked();
  return written;
}

Status PresetCatalogue::replace(const Preset& preset) {
  State& s = *state_;
  if (Status from_file = not_from_file(preset.id); !from_file.ok()) {
    return from_file;
  }
  MutexLock write(s.write_mu);
  for (const auto& b : s.builtin) {
    if (b.preset.id == preset.id) {
      return builtin_conflict(preset.id, "create a user preset with another id instead");
    }
  }
  Status written = rewrite(s.user_file.path(), [&](nlohmann::ordered_json& file) -> Status {
    if (!file.contains(preset.id)) {
      return unknown_preset(preset.id);
    }
    if (Status exists = check_model_exists(preset); !exists.ok()) {
      return exists;
    }
    file[preset.id] = preset.to_json();
    return ok_status();
  });
  MutexLock lock(s.mu);
  s.refresh_locked();
  return written;
}

Status PresetCatalogue::remove(std::string_view id) {
  State& s = *state_;
  if (Status from_file = not_from_file(id); !from_file.ok()) {
    return from_file;
  }
  MutexLock write(s.write_mu);
  for (const auto& b : s.builtin) {
    if (b.preset.id == id) {
      return builtin_conflict(id, "it cannot be deleted");
    }
  }
  Status written = rewrite(s.user_file.path(), [&](nlohmann::ordered_json& file) -> Status {
    if (file.erase(std::string(id)) == 0) {
      return unknown_preset(id);
    }
    return ok_status();
  });
  MutexLock lock(s.mu);
  s.refresh_locked();
  return written;
}

PresetReport PresetCatalogue::report() const {
  State& s = *state_;
  MutexLock lock(s.mu);
  s.refresh_locked();
  (void)s.read_ini_locked(sources_.llamacpp_ini, false);
  PresetReport r;
  r.builtin = static_cast<int>(s.builtin.size());
  r.user = static_cast<int>(s.user.size());
  r.file = static_cast<int>(s.ini.size());
  r.errors = s.builtin_errors;
  r.errors.insert(r.errors.end(), s.user_errors.begin(), s.user_errors.end());
  if (!s.ini_error.empty()) {
    r.errors.push_back(s.ini_error);
  }
  return r;
}

Status PresetCatalogue::not_from_file(std::string_view id) const {
  MutexLock lock(state_->mu);
  for (const auto& e : state_->ini) {
    if (e.preset.id == id) {
      return Error(ErrorCode::kConflict,
                   "preset '" + std::string(id) + "' comes from " + sources_.llamacpp_ini +
                       " and is read-only here: change it in that file",
                   "id");
    }
  }
  return ok_status();
}

}  // namespace lemon
