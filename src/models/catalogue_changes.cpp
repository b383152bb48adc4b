// ModelCatalogue's changes to its files: user models registered and
// removed, load options saved and forgotten, Lemonade 11's option keys
// migrated (models/catalogue.h states the contract).
#include <fstream>
#include <sstream>

#include "catalogue_state.h"
#include "lemon/core/atomic_file.h"
#include "lemon/core/log.h"
#include "lemon/models/model_names.h"
#include "lemon/models/user_models.h"

namespace lemon {

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

}  // namespace lemon
