#include "lemon/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace lemon {

namespace fs = std::filesystem;

namespace {

ErrorCode write_failure_code(int err) {
  if (err == EROFS || err == EACCES || err == EPERM) {
    return ErrorCode::kStorageReadOnly;
  }
  if (err == ENOSPC || err == EDQUOT) {
    return ErrorCode::kInsufficientStorage;
  }
  return ErrorCode::kInternal;
}

Error write_failure(int err, const std::string& what) {
  return Error(write_failure_code(err), what + ": " + std::strerror(err));
}

// Writes all of `text` to `fd`; 0 or the errno of the failure.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace

Status write_file_atomically(const fs::path& path, std::string_view text) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return write_failure(ec.value(), "cannot create " + path.parent_path().string());
  }
  // A hidden name unique to this process and call.
  fs::path tmp =
      path.parent_path() / ("." + path.filename().string() + ".tmp" + std::to_string(::getpid()) +
                            "-" + std::to_string(++counter));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return write_failure(errno, "cannot write " + path.string());
  }
  const int written = write_all(fd, text);
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (written != 0 || closed != 0) {
    ::unlink(tmp.c_str());
    return write_failure(written != 0 ? written : closed, "cannot write " + path.string());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return write_failure(err, "cannot replace " + path.string());
  }
  return ok_status();
}

Result<nlohmann::ordered_json> read_json_object_for_update(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return nlohmann::ordered_json::object();
  }
  std::ifstream in(path);
  if (!in) {
    return Error(ErrorCode::kInternal, "cannot read " + path.string());
  }
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find_first_not_of(" \t\r\n") == std::string::npos) {
    return nlohmann::ordered_json::object();
  }
  const std::string fix = "; fix or remove it before changing it";
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 1: ..."
    std::string why = e.what();
    if (const auto at = why.find("] "); at != std::string::npos) {
      why.erase(0, at + 2);
    }
    return Error(ErrorCode::kConfigFileInvalid,
                 path.string() + " is not valid JSON (" + why + ")" + fix);
  }
  if (!j.is_object()) {
    return Error(ErrorCode::kConfigFileInvalid, path.string() +
                                                    " is not a JSON object (it holds a " +
                                                    std::string(j.type_name()) + ")" + fix);
  }
  return j;
}

}  // namespace lemon
