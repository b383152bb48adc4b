#include "lemon/models/cache_cleanup.h"

#include <optional>
#include <system_error>

#include "lemon/core/log.h"
#include "lemon/models/hf_cache.h"

namespace lemon {
namespace fs = std::filesystem;

namespace {

// The first regular file under `dir` that `variant` names: its file name,
// or, for a variant with a folder, a path ending in it.
std::optional<fs::path> find_variant_file(const fs::path& dir, const std::string& variant) {
  std::error_code ec;
  const bool nested = variant.find('/') != std::string::npos;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec)) {
      continue;
    }
    const std::string path = it->path().generic_string();
    if (it->path().filename() == variant || (nested && path.ends_with("/" + variant))) {
      return it->path();
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<OrphanedFile> find_orphaned_files(const std::vector<ModelInfo>& models,
                                              const fs::path& hub) {
  std::vector<OrphanedFile> out;
  for (const ModelInfo& info : models) {
    if (info.checkpoints.size() <= 1) {
      continue;
    }
    const std::string main_repo = hf::split_checkpoint(info.checkpoint()).repo;
    const fs::path main_dir = hf::repo_dir(hub, main_repo);
    std::error_code ec;
    if (main_repo.empty() || !fs::is_directory(main_dir, ec)) {
      continue;
    }
    for (const auto& [type, checkpoint] : info.checkpoints) {
      if (type == "main" || type == "npu_cache") {
        continue;
      }
      const hf::CheckpointRef ref = hf::split_checkpoint(checkpoint);
      if (ref.repo == main_repo || ref.variant.empty()) {
        continue;
      }
      if (auto file = find_variant_file(main_dir, ref.variant)) {
        std::error_code size_ec;
        const auto size = fs::file_size(*file, size_ec);
        out.push_back({file->string(), size_ec ? 0 : size, info.name, type, ref.repo});
      }
    }
  }
  return out;
}

nlohmann::json cleanup_orphaned_files(const std::vector<ModelInfo>& models, const fs::path& hub,
                                      bool dry_run) {
  nlohmann::json files = nlohmann::json::array();
  std::uintmax_t total = 0;
  for (const OrphanedFile& f : find_orphaned_files(models, hub)) {
    files.push_back({{"path", f.path},
                     {"size", f.size},
                     {"model", f.model},
                     {"type", f.type},
                     {"belongs_to", f.belongs_to}});
    total += f.size;
    if (!dry_run) {
      std::error_code ec;
      fs::remove(f.path, ec);
      if (ec) {
        logger("models")->warn("cleanup-cache: cannot remove {}: {}", f.path, ec.message());
      } else {
        logger("models")->info("cleanup-cache: removed {} ({} of {}, belongs to {})", f.path,
                               f.type, f.model, f.belongs_to);
      }
    }
  }
  return {{"orphaned_files", std::move(files)}, {"total_bytes", total}, {"dry_run", dry_run}};
}

}  // namespace lemon
