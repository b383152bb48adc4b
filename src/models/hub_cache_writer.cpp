#include "lemon/models/hub_cache_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <atomic>
#include <fstream>
#include <system_error>

#include "lemon/core/atomic_file.h"

namespace lemon::hf {

namespace fs = std::filesystem;

namespace {

Error fs_error(const std::string& what, const fs::path& p, const std::error_code& ec) {
  return Error(ErrorCode::kInternal, "cannot " + what + " " + p.string() + ": " + ec.message());
}

// A name beside `target` for writing before the rename.
fs::path aside(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  return target.parent_path() / ("." + target.filename().string() + ".tmp" +
                                 std::to_string(::getpid()) + "-" + std::to_string(++counter));
}

}  // namespace

BlobLock& BlobLock::operator=(BlobLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

BlobLock::~BlobLock() {
  if (fd_ >= 0) {
    ::close(fd_);  // releases the flock
  }
}

Result<BlobLock> lock_blob(const fs::path& repo_dir, std::string_view etag,
                           const std::function<bool()>& cancelled) {
  fs::path lock_file =
      repo_dir.parent_path() / ".locks" / repo_dir.filename() / (std::string(etag) + ".lock");
  std::error_code ec;
  fs::create_directories(lock_file.parent_path(), ec);
  if (ec) {
    return fs_error("create", lock_file.parent_path(), ec);
  }
  int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error(ErrorCode::kInternal,
                 "cannot open " + lock_file.string() + ": " + errno_message(errno));
  }
  BlobLock lock(fd);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return Error(ErrorCode::kInternal,
                   "cannot lock " + lock_file.string() + ": " + errno_message(errno));
    }
    if (cancelled && cancelled()) {
      return Error(ErrorCode::kCancelled, "cancelled while waiting for " + lock_file.string());
    }
    // Another thread or process (huggingface-cli, a second router) writes
    // this blob; its lock is released when it ends.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return lock;
}

fs::path blob_path(const fs::path& repo_dir, std::string_view etag) {
  return repo_dir / "blobs" / std::string(etag);
}

fs::path incomplete_path(const fs::path& repo_dir, std::string_view etag) {
  return repo_dir / "blobs" / (std::string(etag) + ".incomplete");
}

fs::path snapshot_entry(const fs::path& repo_dir, std::string_view commit, std::string_view rel) {
  return repo_dir / "snapshots" / std::string(commit) / std::string(rel);
}

bool is_complete_file(const fs::path& path, std::uint64_t size) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::is_regular_file(st)) {
    return false;
  }
  auto actual = fs::file_size(path, ec);
  return !ec && actual == size;
}

std::uint64_t incomplete_bytes(const fs::path& repo_dir, std::string_view etag) {
  std::error_code ec;
  auto size = fs::file_size(incomplete_path(repo_dir, etag), ec);
  return ec ? 0 : size;
}

Status link_snapshot_entry(const fs::path& repo_dir, std::string_view commit, std::string_view rel,
                           std::string_view etag) {
  fs::path entry = snapshot_entry(repo_dir, commit, rel);
  std::error_code ec;
  fs::create_directories(entry.parent_path(), ec);
  if (ec) {
    return fs_error("create", entry.parent_path(), ec);
  }
  // snapshots/<commit>/a/b/file -> ../../../blobs/<etag>
  fs::path target = blob_path(repo_dir, etag).lexically_relative(entry.parent_path());
  fs::path tmp = aside(entry);
  fs::create_symlink(target, tmp, ec);
  if (ec) {
    return fs_error("create the link", tmp, ec);
  }
  fs::rename(tmp, entry, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return fs_error("place the link", entry, ec);
  }
  return ok_status();
}

Status write_ref(const fs::path& repo_dir, std::string_view ref, std::string_view commit) {
  // No newline after the commit, as huggingface_hub writes it.
  return write_file_atomically(repo_dir / "refs" / std::string(ref), commit);
}

}  // namespace lemon::hf
