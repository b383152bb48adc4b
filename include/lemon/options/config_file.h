// config.json: a sparse JSON file of settings, layered under
// the environment and the flags. Precedence, lowest first: built-in
// defaults < the distribution's defaults file < `<config dir>/config.json`
// < LEMONADE_* variables < flags. Each row of router_settings() is one
// setting, under its key (router_settings.h); the sections `auth`,
// `profiles`, `remote` and `remote_discovery` are read whole
// (settings_reader.h). An unknown key, a value of the wrong JSON type or
// one the setting's check refuses is an error that names the file and the
// key's JSON path.
//
// Thread-safety: plain functions; call them from one thread (the parse).
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace CLI {
class App;
}

namespace lemon {

// LEMONADE_CONFIG_DIR, else $HOME/.config/lemonade.
std::filesystem::path config_dir();
// LEMONADE_DEFAULTS_FILE, else /usr/share/lemonade-router/defaults.json.
std::filesystem::path distro_defaults_file();

// A config file's object: a missing file is an empty one; one that is not a
// JSON object is an error naming the file (and the parser's complaint).
Result<nlohmann::json> read_config_file(const std::filesystem::path& file);

// Gives every setting `values` holds to its option of `app`
// (add_setting_options) as that option's default, so a variable or a flag still overrides it.
// Records in `sources` (key -> `origin`) what it set. Errors name `origin` and the path.
Status apply_config_file(CLI::App& app, const nlohmann::json& values, const std::string& origin,
                         std::map<std::string, std::string>& sources);

// Merges `changes` (config.json's shape) into `file`: a section's keys one
// by one, null removes a key (back to its default), anything else replaces.
// Keys and their order not named are kept.
void merge_config_changes(nlohmann::ordered_json& file, const nlohmann::json& changes);

// The setting key of a router flag (`--keep-alive` -> "keep_alive",
// `--llamacpp-args` -> "llamacpp.args"); "" for options that are no setting
// (--ready-fd, --help).
std::string config_key_of_flag(const std::string& flag);

}  // namespace lemon
