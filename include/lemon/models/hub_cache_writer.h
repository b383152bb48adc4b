// Writing the Hugging Face hub cache layout, the
// counterpart of hf_cache.h's reader, as huggingface_hub writes it:
//
//   <hub>/models--org--name/blobs/<etag>                 the content
//   <hub>/models--org--name/blobs/<etag>.incomplete      a download in progress
//   <hub>/models--org--name/snapshots/<commit>/<path>    relative symlink to
//                                                        ../../blobs/<etag>
//                                                        (one more ../ per folder)
//   <hub>/models--org--name/refs/main                    the commit, no newline
//
// The etag is the LFS sha256, or the git blob sha1 for small files. Links
// and refs are replaced atomically (write aside, then rename), so a reader
// never sees a half-made entry.
//
// Ownership/thread-safety: free functions over paths. Concurrent writers of
// the same entry are safe (last rename wins, with identical content).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "lemon/core/error.h"

namespace lemon::hf {

// An exclusive flock(2) on <hub>/.locks/models--org--name/<etag>.lock, the
// lock huggingface_hub takes around writing a blob. Released on destruction.
class BlobLock {
 public:
  BlobLock() = default;
  explicit BlobLock(int fd) : fd_(fd) {}
  BlobLock(BlobLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  BlobLock& operator=(BlobLock&& other) noexcept;
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;
  ~BlobLock();

 private:
  int fd_ = -1;
};

// Waits for the blob's lock, polling `cancelled` (kCancelled). kInternal
// when the lock file cannot be created.
Result<BlobLock> lock_blob(const std::filesystem::path& repo_dir, std::string_view etag,
                           const std::function<bool()>& cancelled);

std::filesystem::path blob_path(const std::filesystem::path& repo_dir, std::string_view etag);
std::filesystem::path incomplete_path(const std::filesystem::path& repo_dir, std::string_view etag);
std::filesystem::path snapshot_entry(const std::filesystem::path& repo_dir, std::string_view commit,
                                     std::string_view rel);

// True when `path` (following symlinks) is a regular file of `size` bytes.
bool is_complete_file(const std::filesystem::path& path, std::uint64_t size);

// Bytes already in the blob's .incomplete file (0 when none).
std::uint64_t incomplete_bytes(const std::filesystem::path& repo_dir, std::string_view etag);

// Makes snapshots/<commit>/<rel> a relative symlink to blobs/<etag>,
// replacing whatever entry was there. kInternal on file-system errors.
Status link_snapshot_entry(const std::filesystem::path& repo_dir, std::string_view commit,
                           std::string_view rel, std::string_view etag);

// Writes refs/<ref> = commit atomically.
Status write_ref(const std::filesystem::path& repo_dir, std::string_view ref,
                 std::string_view commit);

}  // namespace lemon::hf
