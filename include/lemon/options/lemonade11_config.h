// Lemonade 11's config.json (lemonade-sdk/lemonade v11.7.0,
// docs/guide/configuration/README.md and resources/defaults.json) read as
// ours: a file Lemonade 11 wrote, or one written for it, starts the router.
// Each of 11's keys is either one of our settings under the same key, a
// key that stands for one of ours (`global_timeout` is `request_timeout`),
// or accepted and listed as not applied. A key neither defines stays in
// the file, so reading it still fails (config_file.h).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lemon {

struct Lemonade11Reading {
  nlohmann::json settings;               // the file with 11's keys in our terms
  std::vector<std::string> not_applied;  // 11's keys it held that nothing here applies
};

// `file` (a config.json object) in our keys:
// - `global_timeout` becomes `request_timeout` unless the file sets that;
// - `broadcast: false` becomes `no_broadcast: true` unless the file sets that;
// - `ctx_size: -1` (11's size-to-fit) and `<section>.backend: "auto"` fall
//   to our defaults, which choose for themselves;
// - `log_level` `fatal` and `none` read as `critical`;
// - booleans of text settings (`llamacpp.prefer_system`) become their text;
// - 11's keys with no counterpart ("telemetry", "flm", "llamacpp.cpu_args")
//   are dropped and named in `not_applied`, by their dotted path.
Lemonade11Reading read_lemonade11_keys(const nlohmann::json& file);

// Every key Lemonade 11 defines that is accepted but not applied, dotted
// ("sdcpp.cuda_args"); a section that is all unapplied is one entry ("flm").
const std::vector<std::string>& lemonade11_unapplied_keys();

// Settings as one config.json object, the shape Lemonade 11's GET
// /internal/config answers with: `values` (key -> text, as
// SettingsProvenance holds them) under their keys, typed by their rows
// (numbers, booleans, max_loaded_models a number or a list), dotted keys
// nested ("llamacpp": {"backend": ...}), sections as their JSON. Keys of
// `values` that are no row are left out.
nlohmann::json settings_as_config(const std::map<std::string, std::string>& values);

// Every setting's default in that shape (GET /internal/config/defaults).
nlohmann::json default_settings_as_config();

}  // namespace lemon
