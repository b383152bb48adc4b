#include "lemon/download/disk_space.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace lemon::download {

namespace {

std::string gib(std::uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

}  // namespace

std::uint64_t free_space_margin(std::uint64_t bytes_needed) {
  return std::max<std::uint64_t>(256u << 20, bytes_needed / 100);
}

std::optional<std::uint64_t> free_bytes(const std::filesystem::path& dir) {
  std::filesystem::path p = dir;
  std::error_code ec;
  while (!p.empty() && !std::filesystem::exists(p, ec)) {
    if (p == p.parent_path()) {
      break;
    }
    p = p.parent_path();
  }
  if (p.empty()) {
    p = ".";
  }
  struct statvfs st {};
  if (::statvfs(p.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

Status check_free_space(const std::filesystem::path& dir, std::uint64_t bytes_needed) {
  if (bytes_needed == 0) {
    return ok_status();
  }
  std::optional<std::uint64_t> available;
  if (const char* forced = std::getenv("LEMONADE_DOWNLOAD_FREE_BYTES");
      forced != nullptr && *forced != '\0') {
    char* end = nullptr;
    unsigned long long v = std::strtoull(forced, &end, 10);
    if (end != forced && *end == '\0') {
      available = v;
    }
  }
  if (!available) {
    available = free_bytes(dir);
  }
  if (!available) {
    return ok_status();
  }
  const std::uint64_t wanted = bytes_needed + free_space_margin(bytes_needed);
  if (wanted <= *available) {
    return ok_status();
  }
  return Error(ErrorCode::kInsufficientStorage,
               "not enough disk space in " + dir.string() + ": the download needs " +
                   std::to_string(bytes_needed) + " bytes (" + gib(bytes_needed) + ") plus a " +
                   gib(free_space_margin(bytes_needed)) + " margin, and " +
                   std::to_string(*available) + " bytes (" + gib(*available) + ") are free");
}

}  // namespace lemon::download
