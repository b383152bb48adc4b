// The registration half of POST /pull: turns Lemonade 9.4.1's
// request fields into a user_models.json entry, after checking every field.
//
//   model_name / model   "user.<key>"; key non-empty, no '/', '\\', "..",
//                        leading '.', or control characters
//   checkpoint           "org/name[:file-or-variant]"; a llamacpp GGUF repo
//                        needs ":VARIANT" (as Lemonade requires)
//   checkpoints          {"main": ..., "mmproj": ..., ...} instead of checkpoint
//   recipe               one the router serves
//   mmproj               a file in the main repository
//   reasoning, vision, embedding, reranking, labels   -> "labels"
//
// The entry has Lemonade's shape: checkpoint(s), recipe, mmproj, size,
// image_defaults as given, "labels" (sorted, with "custom", plus "image" for
// sd-cpp and "audio" for whispercpp) and "suggested": true.
//
// Ownership/thread-safety: pure functions; no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon {

struct UserModelRegistration {
  std::string key;  // user_models.json key (the name without "user.")
  nlohmann::ordered_json entry;
};

// True when the body carries registration fields (checkpoint, checkpoints or
// recipe).
bool has_registration_fields(const nlohmann::json& body);

// The checked entry. Errors are kInvalidRequest with param "model_name",
// "checkpoint", "recipe", "mmproj" or "labels".
Result<UserModelRegistration> parse_user_registration(std::string_view model_name,
                                                      const nlohmann::json& body);

// A user model's key (the name without "user."): non-empty, at most 200
// bytes, no leading '.', no "..", '/', '\\' or control characters
// (kInvalidRequest, param "model_name").
Status check_user_model_key(std::string_view key);

// True for the recipes the router serves (llamacpp, flm, ryzenai-llm,
// oga-npu, oga-hybrid, oga-cpu, whispercpp, sd-cpp).
bool is_known_recipe(std::string_view recipe);

}  // namespace lemon
