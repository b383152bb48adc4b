// Registry entries: turns one object of server_models.json or
// user_models.json into a ModelInfo (checkpoints incl. the legacy top-level
// "mmproj", recipe, labels, size, suggested, image_defaults, source, type),
// and computes a model's saved options from its recipe_options.json entry.
//
// Ownership/thread-safety: pure functions; no I/O.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/models/model_info.h"

namespace lemon {

// `name` is the full model name ("Qwen3-0.6B-GGUF", "user.x"). `source` is
// kBuiltIn or kUser; for kUser, "source": "local_path" / "local_upload" in
// the entry select kUserLocalPath / kUserLocalUpload. Built-in entries
// default to suggested=false, user entries to true (as in Lemonade).
// Fails with kInvalidOption when a field has the wrong type or the entry has
// no recipe or no main checkpoint.
Result<ModelInfo> parse_registry_entry(const std::string& name, const nlohmann::ordered_json& entry,
                                       ModelSource source);

// The built-in catalogue (server_models.json at `path`): an object keyed by
// model name, each entry as parse_registry_entry reads it (kBuiltIn).
// kInvalidOption naming the file when it cannot be read or is malformed.
Result<std::vector<ModelInfo>> read_server_models(const std::string& path);

// The options saved for `info`: its recipe_options.json entry (`saved`, may
// be null) over its image_defaults (sd-cpp), restricted to its recipe. A key
// with an invalid value is dropped and described in `problems` (may be null).
RecipeOptions saved_options_for(const ModelInfo& info, const nlohmann::json& saved,
                                std::vector<std::string>* problems);

}  // namespace lemon
