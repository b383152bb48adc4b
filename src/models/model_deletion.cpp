// ModelStore::remove_files: deletes exactly one model's files
// (/delete), never another variant of the same repository, never a file
// another registered model needs.
#include <algorithm>
#include <set>
#include <system_error>

#include "lemon/core/log.h"
#include "lemon/models/gguf_variant.h"
#include "lemon/models/hf_cache.h"
#include "lemon/models/hub_client.h"
#include "lemon/models/model_store.h"

namespace lemon {

namespace fs = std::filesystem;

namespace {

bool entry_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

std::vector<std::string> repos_of(const ModelInfo& info) {
  std::vector<std::string> repos;
  for (const auto& [role, ckpt] : info.checkpoints) {
    auto ref = hf::split_checkpoint(ckpt);
    if (is_valid_repo_id(ref.repo) &&
        std::find(repos.begin(), repos.end(), ref.repo) == repos.end()) {
      repos.push_back(ref.repo);
    }
  }
  return repos;
}

// Adds the entries of one snapshot that `role` of `info` uses.
void add_snapshot_entries(const ModelInfo& info, const std::string& role,
                          const hf::CheckpointRef& ref, const fs::path& snapshot,
                          std::set<fs::path>& out) {
  std::vector<std::string> rels;
  if (role == "main" && info.recipe == "llamacpp") {
    rels = choose_gguf(hf::list_files(snapshot), ref.variant).files;
  } else if (role == "main" && is_onnx_recipe(info.recipe)) {
    for (const auto& f : hf::list_files(snapshot)) {
      rels.push_back(f.rel);
    }
  } else if (!ref.variant.empty() && is_safe_repo_path(ref.variant)) {
    rels.push_back(ref.variant);
  }
  for (const auto& rel : rels) {
    fs::path entry = snapshot / rel;
    if (entry_exists(entry) || entry_exists(fs::path(entry.string() + ".partial"))) {
      out.insert(entry);
    }
  }
}

// The snapshot entries (files or links, in every snapshot of each
// repository) that make up `info` on disk now.
std::set<fs::path> model_entries(const ModelInfo& info, const fs::path& hub) {
  std::set<fs::path> out;
  if (info.source != ModelSource::kBuiltIn && info.source != ModelSource::kUser) {
    return out;
  }
  for (const auto& [role, ckpt] : info.checkpoints) {
    auto ref = hf::split_checkpoint(ckpt);
    if (!is_valid_repo_id(ref.repo)) {
      continue;
    }
    std::error_code ec;
    for (fs::directory_iterator it(hf::repo_dir(hub, ref.repo) / "snapshots", ec), end;
         !ec && it != end; it.increment(ec)) {
      if (it->is_directory(ec)) {
        add_snapshot_entries(info, role, ref, it->path(), out);
      }
    }
  }
  return out;
}

// The blob a snapshot symlink points at (normalized), or empty.
fs::path link_target(const fs::path& entry) {
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(entry, ec))) {
    return {};
  }
  fs::path target = fs::read_symlink(entry, ec);
  if (ec) {
    return {};
  }
  return (target.is_absolute() ? target : entry.parent_path() / target).lexically_normal();
}

// True when some symlink under <repo>/snapshots still points at `blob`.
bool blob_in_use(const fs::path& repo, const fs::path& blob) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(repo / "snapshots", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_symlink(ec) && link_target(it->path()) == blob) {
      return true;
    }
  }
  return false;
}

bool dir_is_empty(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::directory_iterator(dir, ec) == fs::directory_iterator();
}

// Removes empty folders from `from` up to and including `stop`.
void prune_empty_dirs(fs::path from, const fs::path& stop) {
  std::error_code ec;
  while (from.string().size() >= stop.string().size() && dir_is_empty(from)) {
    fs::remove(from, ec);
    if (from == stop) {
      break;
    }
    from = from.parent_path();
  }
}

}  // namespace

Status ModelStore::remove_files(std::string_view name) {
  auto info = catalogue_.find(name);
  if (!info) {
    return Error(ErrorCode::kModelNotFound, "model '" + std::string(name) + "' not found", "model");
  }
  if (info->source != ModelSource::kBuiltIn && info->source != ModelSource::kUser) {
    return Error(ErrorCode::kUnsupportedOperation,
                 "model '" + info->name +
                     "' is served from a local path or the extra models folder; its files are "
                     "yours and are never deleted",
                 "model");
  }
  if (info->recipe == "flm") {
    return Error(
        ErrorCode::kUnsupportedOperation,
        "FLM models are removed by FastFlowLM itself: run `flm remove " + info->checkpoint() + "`",
        "model");
  }
  auto mine = model_entries(*info, hub_cache_);
  if (mine.empty()) {
    return Error(ErrorCode::kModelFilesMissing,
                 "model '" + info->name + "' is not downloaded; there is nothing to delete",
                 "model");
  }

  // Entries that other downloaded models of the same repositories need.
  std::set<fs::path> keep;
  auto my_repos = repos_of(*info);
  for (const auto& other : catalogue_.registered()) {
    if (other.name == info->name) {
      continue;
    }
    auto theirs = repos_of(other);
    bool shares = std::any_of(theirs.begin(), theirs.end(), [&](const std::string& r) {
      return std::find(my_repos.begin(), my_repos.end(), r) != my_repos.end();
    });
    // Only a model that is complete uses its files; a partial one (its
    // main file deleted before) does not keep a shared file alive.
    if (shares && catalogue_.resolve(other.name).value_or(ModelInfo{}).downloaded) {
      auto entries = model_entries(other, hub_cache_);
      keep.insert(entries.begin(), entries.end());
    }
  }

  if (std::all_of(mine.begin(), mine.end(), [&](const fs::path& e) { return keep.contains(e); })) {
    return Error(ErrorCode::kModelFilesMissing,
                 "model '" + info->name +
                     "' is not downloaded; its only files on disk belong to "
                     "other models too",
                 "model");
  }

  auto log = logger("models");
  std::set<std::pair<fs::path, fs::path>> blobs;  // (repo dir, blob)
  std::error_code ec;
  for (const auto& entry : mine) {
    if (keep.contains(entry)) {
      log->info("delete {}: keeping {} (another model uses it)", info->name, entry.string());
      continue;
    }
    // <hub>/models--org--name/snapshots/<commit>/<rel>
    fs::path repo;
    for (fs::path p = entry.parent_path(); !p.empty() && p != p.parent_path();
         p = p.parent_path()) {
      if (p.filename() == "snapshots") {
        repo = p.parent_path();
        break;
      }
    }
    if (auto blob = link_target(entry); !blob.empty() && !repo.empty()) {
      blobs.emplace(repo, blob);
    }
    fs::remove(entry, ec);
    if (ec) {
      return Error(ErrorCode::kInternal, "cannot delete " + entry.string() + ": " + ec.message());
    }
    fs::remove(fs::path(entry.string() + ".partial"), ec);
    if (!repo.empty()) {
      prune_empty_dirs(entry.parent_path(), repo / "snapshots");
    }
  }
  std::set<fs::path> repos;
  for (const auto& [repo, blob] : blobs) {
    repos.insert(repo);
    if (blob.parent_path() == repo / "blobs" && !blob_in_use(repo, blob)) {
      fs::remove(blob, ec);
    }
  }
  for (const auto& repo : repos) {
    if (!fs::exists(repo / "snapshots", ec) && dir_is_empty(repo / "blobs")) {
      fs::remove_all(repo, ec);  // nothing of the repository is left but refs
    }
  }
  log->info("deleted the files of {}", info->name);
  return ok_status();
}

}  // namespace lemon
