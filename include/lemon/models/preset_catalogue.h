// PresetCatalogue: the presets the router knows, built-in
// (resources/presets.json, read once, read-only) and the user's (presets.json
// in the cache dir, re-read when its mtime or size changes, changed through
// create/replace/remove), and the ModelResolver the Router is built with.
//
// A third source, llama-server's preset file (--models-preset FILE.ini,
// llamacpp_preset_file.h), adds read-only presets named by their section:
// a request names one by its section name or one of its aliases, without
// the "preset." prefix (as llama.cpp's clients do), or as "preset.<name>".
// The file is read at start (an error there stops the router), again when
// it changes (an error then keeps the presets read before, and is listed in
// report()), and when reload_file() asks.
//
// resolve() wraps the ModelCatalogue: "preset.<id>" and a preset's server
// name ("<base>~<8 hex>", preset.h) both give the base model's ModelInfo
// named after the server, with the preset's load options over the base's
// saved options; every other name passes through to the catalogue. So two
// presets with equal load-time settings share one server, and the router
// needs to know nothing about presets.
//
// Robustness: an unparseable file or an invalid entry is logged and listed
// in report().errors; the file's valid entries and the built-ins still work.
// A malformed user file is never overwritten: writes then fail (kInternal).
//
// Ownership: holds a reference to the catalogue, which outlives it.
// Thread-safety: every method may be called from any thread; writers are
// serialized, and readers see the old or the new file, never a mix.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/models/catalogue.h"
#include "lemon/models/llamacpp_preset_file.h"
#include "lemon/models/preset.h"

namespace lemon {

struct PresetSources {
  std::string builtin_json;  // resources/presets.json (missing: no built-ins)
  std::string cache_dir;     // the user's presets.json lives here ("" : none)
  std::string hf_hub_cache;  // where checkpoint presets' files are looked for
  std::string llamacpp_ini;  // llama-server's preset file ("" : none)
};

struct PresetEntry {
  Preset preset;
  bool builtin = false;
  std::string server;  // preset.server_name()
  // From the llama-server preset file: its aliases, tags and preset-only
  // keys. Null for presets.json's.
  std::shared_ptr<const IniPreset> ini;
};

// For /system-info.
struct PresetReport {
  int builtin = 0;
  int user = 0;
  int file = 0;                     // from llama-server's preset file
  std::vector<std::string> errors;  // "<file>: <what>"
};

class PresetCatalogue final : public ModelResolver {
 public:
  // Reads the preset file, if any: file_status() says whether it could.
  PresetCatalogue(const ModelCatalogue& models, PresetSources sources);
  ~PresetCatalogue() override;

  // The preset file's first reading: OK, or the error naming its file and
  // line (the router does not start with it).
  Status file_status() const;
  // Reads the preset file again now. An error keeps the presets read
  // before and is returned.
  Status reload_file();
  // The presets of the file (file order).
  std::vector<PresetEntry> file_presets() const;

  Result<ModelInfo> resolve(std::string_view name) const override;
  // Presets and their servers are named as they are; other names as the
  // catalogue finds them.
  std::optional<std::string> internal_name(std::string_view name) const override;

  // Built-ins first (file order), then the user's (file order), then the
  // preset file's.
  std::vector<PresetEntry> list() const;
  std::optional<PresetEntry> find(std::string_view id) const;
  // For a request's model: "preset.ID" is that preset, or kModelNotFound
  // (param "model") when there is none; "NAME:VARIANT" is the preset of that
  // id when there is one; a preset file's section name or alias is its
  // preset; anything else is nullopt (no preset).
  Result<std::optional<PresetEntry>> for_request(std::string_view model) const;
  // The catalogue name behind a server name (what to download or install
  // for it): the base model of a preset server, else `name` itself.
  std::string catalogue_name(std::string_view name) const;
  // The catalogue names whose files a server name needs: catalogue_name(),
  // then a preset's draft when it names a catalogue model.
  std::vector<std::string> catalogue_names(std::string_view name) const;

  // Writes to the user's presets.json. create: kConflict when the id is
  // taken (built-in or user); replace and remove: kConflict for a built-in,
  // kModelNotFound (param "preset") for an unknown id. A catalogue `model`
  // must exist (kInvalidRequest, param "model"). kInternal when the file is
  // malformed (it is left alone) or cannot be written.
  Status create(const Preset& preset);
  Status replace(const Preset& preset);
  Status remove(std::string_view id);

  PresetReport report() const;

 private:
  struct State;
  Result<ModelInfo> server_info(const PresetEntry& entry) const;
  // Names the preset's draft in `info` and resolves its file.
  void add_draft(const Preset& preset, ModelInfo& info) const;
  Status check_model_exists(const Preset& preset) const;
  // kConflict when `id` is a preset of the preset file (read-only).
  Status not_from_file(std::string_view id) const;
  const ModelCatalogue& models_;
  PresetSources sources_;
  std::unique_ptr<State> state_;
};

}  // namespace lemon
