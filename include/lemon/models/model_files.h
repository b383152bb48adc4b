// Model file resolution: fills ModelInfo::resolved_paths, missing_paths and
// downloaded from what is on disk, per recipe and source:
//
//   flm                  the checkpoint (an FLM tag) itself; downloaded unless
//                        the installed list is known and lacks the tag
//   llamacpp main, draft GGUF variant rules (gguf_variant.h) in the repo's
//                        current snapshot (a draft model for speculative
//                        decoding, Lemonade 11's checkpoints.draft)
//   ryzenai-llm, oga-*   the directory holding genai_config.json
//   everything else      "repo:relative/file", an exact file in that repo's
//                        snapshot (mmproj, text_encoder, vae, llm, npu_cache,
//                        whispercpp and sd-cpp main files)
//   local_path           the checkpoint is a path: a file is the model; a
//                        directory is searched like an extra-models folder
//   local_upload         as local_path, relative to the hub cache
//
// Required roles: main; mmproj and draft for llamacpp; text_encoder, vae and llm for
// sd-cpp. Other roles (npu_cache, ...) are resolved when present and never
// make a model not-downloaded. --extra-models-dir entries are resolved by
// their discovery (extra_models.h), not here.
//
// Ownership/thread-safety: free functions; read-only file-system access.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/models/model_info.h"

namespace lemon {

struct ResolveContext {
  std::filesystem::path hf_hub_cache;
  // FLM tags reported installed; nullopt when unknown (FLM models then count
  // as downloaded, since FLM manages its own files).
  std::optional<std::vector<std::string>> flm_installed;
};

// True when a missing `role` makes a model of `recipe` not downloaded.
bool is_required_role(std::string_view recipe, std::string_view role);
// True when `role` of a `recipe` model names a GGUF model by the variant
// rules (llamacpp's main and draft), not an exact file.
bool is_gguf_model_role(std::string_view recipe, std::string_view role);

// Replaces info.resolved_paths, missing_paths and downloaded.
void resolve_model_files(ModelInfo& info, const ResolveContext& ctx);

}  // namespace lemon
