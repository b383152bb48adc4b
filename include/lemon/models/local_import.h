// Local import, the server half of `lemonade-server pull user.NAME
// --checkpoint /abs/folder --recipe R` (Lemonade 9.4.1's `local_import`): the
// CLI has copied the folder into <hub cache>/models--NAME; this finds the
// model file there and builds the user_models.json entry, with
// "source": "local_upload" and the checkpoint relative to the hub cache.
//
//   llamacpp     the first *.gguf (by path) whose name has no "mmproj"
//   whispercpp   the first *.bin
//   sd-cpp       the first *.safetensors, *.gguf or *.ckpt
//   ryzenai-llm, oga-*   the folder holding genai_config.json
//   mmproj       with vision or mmproj: that file, else any *mmproj* file,
//                stored relative to the model file's folder
//
// The other fields (recipe, labels, flags) are checked as for a hub
// registration. Errors: kInvalidRequest naming the field, or when the folder
// holds no model file for the recipe.
//
// Thread-safety: reads the folder; no shared state.
#pragma once

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/models/user_registration.h"

namespace lemon {

Result<UserModelRegistration> register_local_import(std::string_view model_name,
                                                    const nlohmann::json& body,
                                                    const std::filesystem::path& hf_hub_cache);

}  // namespace lemon
