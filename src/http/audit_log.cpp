#include "lemon/http/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "lemon/core/log.h"

namespace lemon::http {

namespace fs = std::filesystem;

AuditLog::AuditLog(fs::path file, std::uint64_t rotate_bytes, int keep)
    : file_(std::move(file)), rotate_bytes_(rotate_bytes), keep_(keep) {}

void AuditLog::record(const nlohmann::json& line) {
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  MutexLock lock(mu_);
  std::error_code ec;
  const auto size = fs::file_size(file_, ec);
  if (!ec && size + text.size() > rotate_bytes_) {
    for (int i = keep_ - 1; i >= 1; --i) {
      fs::rename(file_.string() + "." + std::to_string(i),
                 file_.string() + "." + std::to_string(i + 1), ec);
    }
    fs::rename(file_, file_.string() + ".1", ec);
  }
  fs::create_directories(file_.parent_path(), ec);
  const int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    logger("http")->warn("audit log {}: {}", file_.string(), std::strerror(errno));
    return;
  }
  // One write: lines of concurrent writers never interleave (O_APPEND).
  const ssize_t n = ::write(fd, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) {
    logger("http")->warn("audit log {}: short write", file_.string());
  }
  ::close(fd);
}

}  // namespace lemon::http
