#include "lemon/core/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <system_error>

namespace lemon {

namespace fs = std::filesystem;

Status write_file_atomically(const fs::path& path, std::string_view text) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return Error(ErrorCode::kInternal,
                 "cannot create " + path.parent_path().string() + ": " + ec.message());
  }
  // A hidden name unique to this process and call.
  fs::path tmp =
      path.parent_path() / ("." + path.filename().string() + ".tmp" + std::to_string(::getpid()) +
                            "-" + std::to_string(++counter));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      return Error(ErrorCode::kInternal, "cannot write " + tmp.string());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error(ErrorCode::kInternal, "cannot replace " + path.string() + ": " + ec.message());
  }
  return ok_status();
}

}  // namespace lemon
