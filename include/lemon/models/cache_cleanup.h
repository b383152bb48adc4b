// Orphaned files in the hub cache (Lemonade 11's POST
// /internal/cleanup-cache): a model whose checkpoints come from several
// repositories may have had a non-main file (an mmproj, a draft) stored in
// the main checkpoint's repository folder instead of its own. Such a file
// is found by its name (or, for a variant with a folder, its path) in the
// main repository's folder; `npu_cache` is left alone, as Lemonade does.
//
// Thread-safety: free functions over the file system.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/models/model_info.h"

namespace lemon {

struct OrphanedFile {
  std::string path;         // absolute, in the main repository's folder
  std::uintmax_t size = 0;  // bytes (a symlink's target's)
  std::string model;        // the model's name
  std::string type;         // the checkpoint's role: "mmproj", "draft", ...
  std::string belongs_to;   // the repository it belongs in
};

// Every orphaned file of `models` under the hub cache `hub`, one at most
// per checkpoint, in model order.
std::vector<OrphanedFile> find_orphaned_files(const std::vector<ModelInfo>& models,
                                              const std::filesystem::path& hub);

// Finds them and, unless `dry_run`, removes each; Lemonade's answer:
// {"orphaned_files":[{path,size,model,type,belongs_to}],"total_bytes","dry_run"}.
nlohmann::json cleanup_orphaned_files(const std::vector<ModelInfo>& models,
                                      const std::filesystem::path& hub, bool dry_run);

}  // namespace lemon
