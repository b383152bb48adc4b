// llama.cpp's names for the GGUF models in a Hugging Face hub cache, and the
// file its `-hf org/repo:TAG` takes from there (llama.cpp's common/download.cpp:
// common_list_cached_models, find_best_model):
//
// - A file's TAG is the last [-.]-separated run of [A-Za-z0-9_] of its name,
//   upper-cased, after ".gguf" and a "-0000K-of-0000N" shard suffix are taken
//   off ("Qwen3-0.6B-Q4_K_M.gguf" -> Q4_K_M). Each repository's first shards
//   and single files with a tag are listed once per tag as "org/repo:TAG";
//   mmproj files and speculative heads (mtp-, eagle3-, dflash-, dspark-) are
//   not models.
// - "org/repo:TAG" names the first (sorted) model file whose path holds
//   TAG followed by '.' or '-', case-insensitively; without a TAG, Q4_K_M,
//   then Q8_0, then the first model file. A split model is named by its
//   first shard.
// - An mmproj file in the model's folder goes with it.
//
// Ownership/thread-safety: pure functions over paths and the file system
// (read only); nothing is cached.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/models/model_info.h"

namespace lemon {

struct GgufNameParts {
  std::string prefix;  // the name without ".gguf" and the shard suffix
  std::string tag;     // upper-cased; "" when the name has none
  int index = 1;       // shard number (1 for a single file)
  int count = 1;       // shards in all
};
// nullopt when `filename` does not end with ".gguf" (any case).
std::optional<GgufNameParts> gguf_name_parts(std::string_view filename);

// "owner/repo" or "owner/repo:TAG", each part of [A-Za-z0-9._-] (TAG also
// without '.'), not one of our own prefixes ("user.", "extra.", "preset.").
bool is_hub_model_name(std::string_view name);

// One model of the cache, as llama.cpp names it.
struct HubGguf {
  std::string name;    // "org/repo:TAG" (TAG upper-cased)
  std::string repo;    // "org/repo"
  std::string main;    // the model's file, relative to the snapshot
  std::string mmproj;  // its mmproj file, relative to the snapshot; "" when none
};

// Every model in `hub` whose file is on disk (a split model with all its
// shards), sorted by name.
std::vector<HubGguf> list_hub_ggufs(const std::filesystem::path& hub);

// The model "org/repo[:TAG]" names in `hub`, when its file is on disk.
std::optional<HubGguf> find_hub_gguf(const std::filesystem::path& hub, std::string_view name);

// `name` with its TAG upper-cased, as llama.cpp lists it.
std::string canonical_hub_name(std::string_view name);

// The catalogue entry serving `gguf` (named gguf.name): recipe llamacpp, the
// exact files as checkpoints ("org/repo:<file>"), a "vision" label with an
// mmproj. Not resolved.
ModelInfo hub_gguf_model(const HubGguf& gguf);
// The entry for a model of the hub not on disk yet (a download asked for
// it): the checkpoint "org/repo:TAG", which a pull resolves as a variant.
ModelInfo hub_variant_model(std::string_view name);

}  // namespace lemon
