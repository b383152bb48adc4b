// fake-hub's repositories on disk: ROOT/<org>/<name>/ folders, their files
// with the hashes the hub lists (sha256 and git's blob sha1, cached by path,
// size and mtime), which files are LFS, gated repositories' tokens
// (.fake.json) and GitHub release assets under ROOT/_releases.
//
// Thread-safety: RepoFiles may be called from any thread; a file is hashed
// by one thread at a time. The free functions are pure.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fake::hub {

struct Hashes {
  std::string sha256;
  std::string blob_id;  // git's blob sha1: sha1("blob <size>\0" + content)
};

// The hashes of `text` itself (for listed files that do not exist).
Hashes hashes_of_text(std::string_view text);

// Whether the hub stores the file in LFS: by its extension, or when large.
bool is_lfs(std::string_view rel, std::uint64_t size);

// A relative path that stays inside its folder and names no dot-entry at the
// top (those are the hub's own files, like .fake.json).
bool is_safe_rel(std::string_view rel);
// One part of "org/name": not empty, no '/', no leading dot.
bool is_repo_part(std::string_view part);
// Percent-encodes everything but unreserved characters and '/'.
std::string escape_path(std::string_view p);

struct FileInfo {
  std::string rel;   // path in the repository, '/'-separated
  std::string path;  // on disk
  std::uint64_t size = 0;
  Hashes hashes;
  bool lfs = false;
};

class RepoFiles {
 public:
  explicit RepoFiles(std::string root) : root_(std::move(root)) {}

  // Every repository "org/name", sorted.
  std::vector<std::string> repos() const;
  bool repo_exists(const std::string& repo) const;
  // The token of a gated repository ("" when it is public).
  std::string token_of(const std::string& repo) const;
  // Every file of the repository, sorted by path, with its hashes.
  std::vector<FileInfo> files(const std::string& repo);
  // One file (hashing only that one).
  std::optional<FileInfo> file(const std::string& repo, const std::string& rel);
  // A GitHub release asset: ROOT/_releases/<owner>/<repo>/<tag>/<asset>.
  std::optional<FileInfo> release_asset(const std::string& rel);
  // The commit: sha1 of the sorted (path, sha256) list.
  static std::string commit_of(const std::vector<FileInfo>& files);

 private:
  std::optional<FileInfo> info(const std::string& path, const std::string& rel);
  // Cached by (path, size, mtime); a file is hashed by one thread at a time.
  Hashes hashes(const std::string& path, std::uint64_t size, const std::string& key);

  const std::string root_;
  std::mutex mu_;
  std::condition_variable cv_;  // a file's hashing finished
  std::map<std::string, Hashes> hash_cache_;
  std::set<std::string> hashing_;
};

}  // namespace fake::hub
