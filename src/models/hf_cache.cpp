#include "lemon/models/hf_cache.h"

#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include "lemon/core/text.h"

namespace lemon::hf {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPartialSuffix = ".partial";
constexpr std::string_view kManifestName = ".download_manifest.json";

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The snapshot named by refs/main, if that names an existing snapshot dir.
std::optional<fs::path> snapshot_from_ref(const fs::path& repo_dir) {
  std::ifstream in(repo_dir / "refs" / "main");
  if (!in) {
    return std::nullopt;
  }
  std::string sha;
  std::getline(in, sha);
  sha = std::string(trim_whitespace(sha));
  if (sha.empty() || sha == "." || sha == ".." || sha.find('/') != std::string::npos) {
    return std::nullopt;
  }
  fs::path snap = repo_dir / "snapshots" / sha;
  if (!is_dir(snap)) {
    return std::nullopt;
  }
  return snap;
}

}  // namespace

CheckpointRef split_checkpoint(std::string_view checkpoint) {
  auto colon = checkpoint.find(':');
  if (colon == std::string_view::npos) {
    return {std::string(checkpoint), ""};
  }
  return {std::string(checkpoint.substr(0, colon)), std::string(checkpoint.substr(colon + 1))};
}

fs::path repo_dir(const fs::path& hub, std::string_view repo) {
  std::string name = "models--";
  for (char c : repo) {
    if (c == '/') {
      name += "--";
    } else {
      name += c;
    }
  }
  return hub / name;
}

std::optional<fs::path> current_snapshot(const fs::path& repo_dir) {
  if (auto snap = snapshot_from_ref(repo_dir)) {
    return snap;
  }
  std::optional<fs::path> best;
  fs::file_time_type best_time{};
  std::error_code ec;
  for (auto it = fs::directory_iterator(repo_dir / "snapshots", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (!is_dir(it->path())) {
      continue;
    }
    std::error_code tec;
    auto t = fs::last_write_time(it->path(), tec);
    if (tec) {
      continue;
    }
    if (!best || t > best_time || (t == best_time && it->path().filename() > best->filename())) {
      best = it->path();
      best_time = t;
    }
  }
  return best;
}

bool has_download_manifest(const fs::path& snapshot) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(snapshot / kManifestName, ec));
}

FileState file_state(const fs::path& file) {
  std::error_code ec;
  fs::path partial = file;
  partial += kPartialSuffix;
  if (fs::exists(fs::symlink_status(partial, ec))) {
    return FileState::kPartial;
  }
  auto link = fs::symlink_status(file, ec);
  if (!fs::exists(link)) {
    return FileState::kMissing;
  }
  auto target = fs::status(file, ec);
  if (!fs::exists(target)) {
    return FileState::kDangling;
  }
  return fs::is_regular_file(target) ? FileState::kPresent : FileState::kNotAFile;
}

std::string describe(const std::string& path, FileState state) {
  switch (state) {
    case FileState::kPresent:
    case FileState::kMissing:
      return path;
    case FileState::kDangling:
      return path + " (dangling symlink)";
    case FileState::kPartial:
      return path + " (incomplete download: " + fs::path(path).filename().string() +
             ".partial present)";
    case FileState::kNotAFile:
      return path + " (not a regular file)";
  }
  return path;
}

std::vector<SnapshotFile> list_files(const fs::path& dir) {
  std::map<std::string, FileState> files;
  std::set<std::string> partials;
  std::error_code ec;
  const auto opts = fs::directory_options::skip_permission_denied;
  for (auto it = fs::recursive_directory_iterator(dir, opts, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code sec;
    auto link = it->symlink_status(sec);
    if (sec || fs::is_directory(link)) {
      continue;
    }
    std::string rel = it->path().lexically_relative(dir).generic_string();
    std::string name = it->path().filename().string();
    if (name == kManifestName) {
      continue;
    }
    if (name.size() > kPartialSuffix.size() && name.ends_with(kPartialSuffix)) {
      partials.insert(rel.substr(0, rel.size() - kPartialSuffix.size()));
      continue;
    }
    auto target = fs::status(it->path(), sec);
    if (!fs::exists(target)) {
      files[rel] = FileState::kDangling;
    } else if (fs::is_regular_file(target)) {
      files[rel] = FileState::kPresent;
    }
    // Directory symlinks and special files are neither followed nor listed.
  }
  for (const auto& rel : partials) {
    files[rel] = FileState::kPartial;
  }
  std::vector<SnapshotFile> out;
  out.reserve(files.size());
  for (const auto& [rel, state] : files) {
    out.push_back({rel, state});
  }
  return out;
}

}  // namespace lemon::hf
