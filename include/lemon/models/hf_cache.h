// Hugging Face hub cache lookup: where a repository lives in the hub cache
// (`<hub>/models--org--name/`), which snapshot is current, and the state of
// the files a snapshot holds (present, missing, dangling symlink, partial).
//
// Layout understood: the real HF layout (snapshot files are symlinks into
// `blobs/`) and Lemonade's (files written directly into the snapshot).
// A snapshot holding `.download_manifest.json` is an unfinished download; a
// file with a sibling `<file>.partial` is unfinished too.
//
// Ownership: free functions over paths; nothing is cached.
// Thread-safety: read-only file-system access, safe from any thread.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lemon::hf {

// "org/repo:variant" -> {"org/repo", "variant"}; no ':' gives an empty variant.
struct CheckpointRef {
  std::string repo;
  std::string variant;
};
CheckpointRef split_checkpoint(std::string_view checkpoint);

// `<hub>/models--org--name` for "org/name" ('/' becomes "--").
std::filesystem::path repo_dir(const std::filesystem::path& hub, std::string_view repo);

// The snapshot named by `refs/main` when that file exists and names an
// existing `snapshots/<sha>` directory; otherwise the most recently modified
// directory under `snapshots/` (ties broken by the greater name). nullopt
// when there is no snapshot directory at all.
std::optional<std::filesystem::path> current_snapshot(const std::filesystem::path& repo_dir);

// True when `<snapshot>/.download_manifest.json` exists.
bool has_download_manifest(const std::filesystem::path& snapshot);

enum class FileState {
  kPresent,   // a regular file (after following symlinks), no `.partial` sibling
  kMissing,   // nothing there
  kDangling,  // a symlink whose target is missing
  kPartial,   // `<file>.partial` exists (the file itself may or may not)
  kNotAFile,  // exists but is a directory or special file
};
FileState file_state(const std::filesystem::path& file);

// "<path>" plus a note for the states other than kMissing, e.g.
// "<path> (dangling symlink)". Used for ModelInfo::missing_paths.
std::string describe(const std::string& path, FileState state);

struct SnapshotFile {
  std::string rel;  // relative to the listed directory, '/'-separated
  FileState state;
};

// Every file under `dir`, recursively (directory symlinks are not followed),
// sorted by relative path. A `X.partial` file is not listed itself: it marks
// `X` as kPartial, and `X` is listed even when only the partial exists.
// `.download_manifest.json` is not listed. Empty when `dir` is unreadable.
std::vector<SnapshotFile> list_files(const std::filesystem::path& dir);

}  // namespace lemon::hf
