// ModelInfo: one catalogue entry, as registered (server_models.json,
// user_models.json, --extra-models-dir) plus, once resolved, where its files
// are on disk.
//
// Thread-safety: value type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/model_types.h"
#include "lemon/models/recipe_options.h"

namespace lemon {

// A model's priority is an integer in [kMinPriority,
// kMaxPriority]; POST /load refuses one outside, a saved one is clamped.
inline constexpr int kMinPriority = -1000;
inline constexpr int kMaxPriority = 1000;
constexpr int clamp_priority(std::int64_t value) {
  return static_cast<int>(value < kMinPriority   ? kMinPriority
                          : value > kMaxPriority ? kMaxPriority
                                                 : value);
}

// Where an entry came from; decides the name prefix and how it resolves.
enum class ModelSource {
  kBuiltIn,          // resources/server_models.json, no prefix
  kUser,             // user_models.json, "user." prefix, checkpoint in the HF cache
  kUserLocalPath,    // user_models.json with "source":"local_path": absolute path
  kUserLocalUpload,  // user_models.json with "source":"local_upload": relative to the HF cache
  kExtraDir,         // --extra-models-dir, "extra." prefix
};

struct ModelInfo {
  std::string name;    // "Qwen3-0.6B-GGUF", "user.tiny-embed", "extra.x.gguf"
  std::string recipe;  // "llamacpp", "flm", "ryzenai-llm", "oga-*", "whispercpp", "sd-cpp"
  // Checkpoints by role: "main" always; optionally "mmproj", "npu_cache",
  // "text_encoder", "vae", "llm". A legacy top-level "mmproj" file name is
  // stored here as "<main repo>:<file>".
  std::map<std::string, std::string> checkpoints;
  std::vector<std::string> labels;
  double size_gb = 0.0;
  bool suggested = false;
  ModelSource source = ModelSource::kBuiltIn;
  nlohmann::json image_defaults;  // null unless sd-cpp
  ModelType type = ModelType::kLlm;
  // Per-model options from recipe_options.json (already restricted to recipe).
  RecipeOptions saved_options;
  // recipe_options.json's "pinned": true (Lemonade HEAD's key): the router
  // pins the model whenever it loads it.
  bool saved_pinned = false;
  // recipe "remote": the entry's "policy" and "endpoints",
  // as written (checked by the remote layer); null for other recipes.
  nlohmann::json remote;
  // recipe_options.json's "priority" (an integer, default 0): a load evicts
  // only models of an equal or lower priority.
  int saved_priority = 0;
  // A collection (recipe collection.router or collection.omni): the models
  // it is made of, by their registered names; empty for other recipes.
  std::vector<std::string> components;
  // collection.router: its policy as registered, {"version", "routing"}
  // (checked by the routing layer); collection.omni: {"system_prompt"} when
  // it has one; null otherwise.
  nlohmann::json collection;

  // Filled by resolution: role -> absolute path of the file (or, for
  // ryzenai-llm, the directory holding genai_config.json). Empty until
  // resolved; a role is absent when nothing acceptable is on disk.
  std::map<std::string, std::string> resolved_paths;
  // Human-readable paths (or HF cache locations) that were expected but are
  // absent. Non-empty exactly when !downloaded for file-backed recipes.
  std::vector<std::string> missing_paths;
  bool downloaded = false;

  bool is_collection() const { return !components.empty(); }
  const std::string& checkpoint() const;                              // checkpoints["main"] or ""
  std::string resolved_path(const std::string& role = "main") const;  // "" if absent

  // The object served by GET /models and /models/{id} (Lemonade's shape:
  // id, object, created, owned_by, checkpoint, checkpoints?, recipe,
  // downloaded, suggested, labels, recipe_options, size?, image_defaults?).
  nlohmann::json to_api_json() const;
};

// True for the recipes whose model is a folder of ONNX files (ryzenai-llm,
// oga-*): every file of the repository is fetched, and the main file is the
// folder holding genai_config.json.
bool is_onnx_recipe(std::string_view recipe);

// Lemonade 11's collections: a routing policy over candidate models, and a
// bundle of one model per modality behind one chat.
inline constexpr std::string_view kRouterRecipe = "collection.router";
inline constexpr std::string_view kOmniRecipe = "collection.omni";
inline bool is_collection_recipe(std::string_view recipe) {
  return recipe == kRouterRecipe || recipe == kOmniRecipe;
}

// Whether the model can take images: a "vision" label or an mmproj file.
bool model_has_vision(const ModelInfo& info);

}  // namespace lemon
