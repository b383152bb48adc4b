#include "support/process_watch.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace lemon::testing {

PidWatch::PidWatch(pid_t pid) : pid_(pid) {
  fd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd_ < 0) {
    gone_ = errno == ESRCH;
  }
}

PidWatch::~PidWatch() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

PidWatch::PidWatch(PidWatch&& other) noexcept
    : pid_(other.pid_), fd_(std::exchange(other.fd_, -1)), gone_(other.gone_) {}

bool PidWatch::wait_exit(std::chrono::milliseconds timeout) {
  if (gone_ || fd_ < 0) {
    return gone_;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (n > 0) {
      gone_ = true;
      return true;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    return false;
  }
}

bool wait_pid_exit(pid_t pid, std::chrono::milliseconds timeout) {
  return PidWatch(pid).wait_exit(timeout);
}

std::vector<pid_t> descendants_of(pid_t pid) {
  std::vector<pid_t> out;
  std::vector<pid_t> todo = {pid};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    std::error_code ec;
    const std::string tasks = "/proc/" + std::to_string(p) + "/task";
    for (auto it = std::filesystem::directory_iterator(tasks, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      std::ifstream in(it->path() / "children");
      pid_t child = 0;
      while (in >> child) {
        out.push_back(child);
        todo.push_back(child);
      }
    }
  }
  return out;
}

namespace {

// The NUL-separated fields of /proc/<pid>/<file>.
std::vector<std::string> proc_fields(pid_t pid, const char* file) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file, std::ios::binary);
  std::vector<std::string> out;
  for (std::string field; std::getline(in, field, '\0');) {
    out.push_back(field);
  }
  return out;
}

}  // namespace

std::string environment_value(pid_t pid, const std::string& name) {
  const std::string prefix = name + "=";
  for (const auto& field : proc_fields(pid, "environ")) {
    if (field.rfind(prefix, 0) == 0) {
      return field.substr(prefix.size());
    }
  }
  return {};
}

std::string command_line(pid_t pid) {
  std::string out;
  for (const auto& field : proc_fields(pid, "cmdline")) {
    out += out.empty() ? "" : " ";
    out += field;
  }
  return out;
}

}  // namespace lemon::testing
