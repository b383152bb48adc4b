// --extra-models-dir discovery (Lemonade's Extra-Models-Dir-Spec): GGUF
// models a user keeps outside the HF cache.
//
//   <dir>/X.gguf          -> "extra.X.gguf" (names containing "mmproj" skipped)
//   <dir>/.../D/*.gguf    -> "extra.D": every directory below <dir> holding
//                           .gguf files is one model; main = the first sorted
//                           non-mmproj .gguf (the first shard of a split
//                           model), mmproj = a file with "mmproj" in its name
//                           (adds the "vision" label); a directory with only
//                           mmproj files is skipped
//
// Every model: recipe llamacpp, labels ["custom"(, "vision")], suggested,
// size = sum of its .gguf sizes in GB, downloaded, resolved_paths filled.
// When two directories share a name, the first in sorted path order wins.
//
// Ownership/thread-safety: a pure scan; reads the file system only.
#pragma once

#include <filesystem>
#include <vector>

#include "lemon/models/model_info.h"

namespace lemon {

// The models found under `dir`, sorted by name. Empty when `dir` is empty,
// missing or unreadable.
std::vector<ModelInfo> scan_extra_models_dir(const std::filesystem::path& dir);

}  // namespace lemon
