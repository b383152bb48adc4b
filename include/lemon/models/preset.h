// Preset: a named bundle of a model and its settings, as one
// entry of resources/presets.json or the cache dir's presets.json:
//
//   {"coder": {"name": "...", "description": "...",
//              "model": "Qwen3-Coder-30B-A3B-Instruct-GGUF",
//              "ctx_size": 32768, "llamacpp_args": "...", "llamacpp_backend": "...",
//              "reasoning_format": "deepseek", "chat_template_kwargs": {...},
//              "sampling": {"temperature": 0.7, "top_p": 0.8, "top_k": 20,
//                           "min_p": 0.0, "repeat_penalty": 1.05}}}
//
// Load-time settings (model and llama.cpp's RecipeOptions keys) decide which
// server a preset needs; request-time settings (sampling, reasoning_format,
// chat_template_kwargs) are filled into requests and never start a server.
// The server name is the base model's own name when a catalogue model gets
// no load-time override, else "<base>~<8 hex>": the start of the SHA-256 of
// the canonical JSON of the load-time settings, so equal settings share one
// server and different ones get their own.
//
// Ownership/thread-safety: value types and pure functions; no I/O.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/models/recipe_options.h"

namespace lemon {

// "preset.<id>": how a request names a preset as its model.
inline constexpr std::string_view kPresetPrefix = "preset.";

// How a preset's `model` is given.
enum class PresetModelKind {
  kCatalogue,   // a catalogue name: built-in, "user.<key>" or "extra.<name>"
  kCheckpoint,  // a Hugging Face checkpoint "owner/repo[:VARIANT]"
  kLocalPath,   // an absolute path to a .gguf file
};

struct Preset {
  std::string id;
  std::string name;         // for people; may be empty
  std::string description;  // may be empty
  std::string model;
  RecipeOptions load_options;    // llamacpp keys only (ctx_size, llamacpp_args, ...)
  std::string reasoning_format;  // "" when unset
  nlohmann::json chat_template_kwargs = nlohmann::json();  // null or an object
  nlohmann::json sampling = nlohmann::json::object();      // only the values set

  PresetModelKind model_kind() const;
  // True when the preset changes how its server starts: any load option, or
  // a model that is not a catalogue name (it has no plain server of its own).
  bool has_load_overrides() const;
  // The name its server runs under (see the top of this file).
  std::string server_name() const;
  // The canonical text the server name's hash is taken of.
  std::string load_identity() const;
  // The file's form of this preset (without the id).
  nlohmann::ordered_json to_json() const;
};

// [A-Za-z0-9._-], 1 to 64 characters.
bool valid_preset_id(std::string_view id);

// One entry of a presets file. Errors are kInvalidRequest naming the field
// in param (an unknown field, a wrong type, a value out of range, a bad id).
// `model` must be non-empty and well formed; whether a catalogue name exists
// is not checked here (see PresetCatalogue).
Result<Preset> parse_preset(std::string_view id, const nlohmann::json& entry);

// Fills the preset's request-time values into a chat, completions or
// responses body where it leaves them out: sampling values and
// reasoning_format when absent; chat_template_kwargs merged key by key (the
// request's keys win). True when it changed anything.
bool apply_preset_defaults(const Preset& preset, nlohmann::json& body);

}  // namespace lemon
