#include "lemon/cli/runtime_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lemon/core/atomic_file.h"

namespace lemon::cli {

RuntimePaths RuntimePaths::from_environment() {
  const char* dir = std::getenv("LEMONADE_RUNTIME_DIR");
  return RuntimePaths{dir != nullptr && *dir != '\0' ? std::string(dir) : std::string("/tmp")};
}

std::optional<ServerRecord> read_server_record(const std::string& pid_file) {
  std::ifstream in(pid_file);
  ServerRecord r;
  long long pid = 0;
  long long port = 0;
  if (!(in >> pid >> port) || pid <= 0 || port < 0 || port > 65535) {
    return std::nullopt;
  }
  r.pid = static_cast<pid_t>(pid);
  r.port = static_cast<int>(port);
  return r;
}

Status write_server_record(const std::string& pid_file, const ServerRecord& record) {
  return write_file_atomically(
      pid_file, std::to_string(record.pid) + "\n" + std::to_string(record.port) + "\n");
}

void remove_server_record(const std::string& pid_file, pid_t pid) {
  auto current = read_server_record(pid_file);
  if (current && current->pid == pid) {
    std::error_code ec;
    std::filesystem::remove(pid_file, ec);
  }
}

bool serve_lock_held(const std::string& lock_file) {
  int fd = ::open(lock_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;  // never created: nobody ever held it
  }
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the probe's shared lock, if it got one
  return held;
}

bool is_router_process(pid_t pid) {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  if (ec) {
    return false;
  }
  auto name = exe.filename().string();
  return name == "lemonade-router" || name == "lemonade-router (deleted)";
}

std::optional<ServeLock> ServeLock::try_acquire(const std::string& lock_file, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(lock_file).parent_path(), ec);
  // No O_CLOEXEC: the router child inherits the lock (see the header).
  int fd = ::open(lock_file.c_str(), O_RDONLY | O_CREAT, 0666);  // NOLINT(android-cloexec-open)
  if (fd < 0) {
    if (error != nullptr) {
      *error = "cannot open " + lock_file + ": " + std::strerror(errno);
    }
    return std::nullopt;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return ServeLock(fd);
}

ServeLock::~ServeLock() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

}  // namespace lemon::cli
