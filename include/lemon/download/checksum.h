// Streaming checksums over OpenSSL's EVP interface: sha256 (hub LFS files)
// and git's blob sha1 ("blob <size>\0" + content; hub files kept in git),
// fed chunk by chunk while bytes arrive, so no second pass over a file.
//
// Ownership/thread-safety: Hasher is a move-only value used by one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "lemon/core/error.h"

namespace lemon::download {

struct Checksum {
  enum class Kind { kNone, kSha256, kGitBlobSha1 };
  Kind kind = Kind::kNone;
  std::string hex;  // lower-case hex digest expected
};

const char* checksum_kind_name(Checksum::Kind kind);  // "none", "sha256", "git-sha1"

class Hasher {
 public:
  // For kGitBlobSha1 the total size must be known up front (git's header).
  Hasher(Checksum::Kind kind, std::uint64_t total_size);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;

  void update(const void* data, std::size_t size);
  // Lower-case hex digest; "" for kNone. Call once.
  std::string finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Hashes a whole file (used to verify a file found on disk). kInternal when
// it cannot be read.
Result<std::string> hash_file(const std::filesystem::path& file, Checksum::Kind kind);

// Feeds the first `bytes` of `file` into `hasher` (the prefix of a resumed
// download).
Status hash_prefix(const std::filesystem::path& file, std::uint64_t bytes, Hasher& hasher);

}  // namespace lemon::download
