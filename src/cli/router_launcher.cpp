#include "lemon/cli/router_launcher.h"
#include "lemon/core/mutex.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace lemon::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kKeptLines = 40;

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

void write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

// read(2), again when a signal interrupts it.
ssize_t read_some(int fd, void* buf, std::size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd, buf, n);
    if (got >= 0 || errno != EINTR) {
      return got;
    }
  }
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return 1;
}

}  // namespace

std::string find_router_binary() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / "lemonade-router";
    if (is_executable(beside)) {
      return beside.string();
    }
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && is_executable(fs::path(dir) / "lemonade-router")) {
      return (fs::path(dir) / "lemonade-router").string();
    }
  }
  return {};
}

Result<std::unique_ptr<LaunchedRouter>> LaunchedRouter::start(const LaunchSpec& spec) {
  std::vector<std::string> args;
  args.push_back(spec.binary);
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  args.emplace_back("--ready-fd");
  args.emplace_back("3");
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  int out[2];
  int ready[2];
  int exec_error[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(ready, O_CLOEXEC) != 0 ||
      ::pipe2(exec_error, O_CLOEXEC) != 0) {
    return Error(ErrorCode::kSpawnFailed, std::string("pipe: ") + std::strerror(errno));
  }
  int log_fd = -1;
  if (!spec.log_file.empty()) {
    log_fd = ::open(spec.log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const int first_closed = spec.inherit_fd >= 0 ? 5 : 4;

  pid_t pid = ::fork();
  if (pid < 0) {
    return Error(ErrorCode::kSpawnFailed, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) {
      ::_exit(127);  // the CLI died before the line above
    }
    sigset_t none;
    sigemptyset(&none);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) {
      std::signal(sig, SIG_DFL);
    }
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (null_fd >= 0) {
      ::dup2(null_fd, 0);
    }
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::dup2(ready[1], 3);
    if (spec.inherit_fd >= 0) {
      ::dup2(spec.inherit_fd, 4);
    }
    ::syscall(SYS_close_range, first_closed, ~0U, CLOSE_RANGE_CLOEXEC);
    ::execv(argv[0], argv.data());
    int err = errno;
    write_all(exec_error[1], reinterpret_cast<const char*>(&err), sizeof err);
    ::_exit(127);
  }

  ::close(out[1]);
  ::close(ready[1]);
  ::close(exec_error[1]);
  if (null_fd >= 0) {
    ::close(null_fd);
  }
  int err = 0;
  const ssize_t got = read_some(exec_error[0], &err, sizeof err);
  ::close(exec_error[0]);
  if (got == static_cast<ssize_t>(sizeof err)) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out[0]);
    ::close(ready[0]);
    if (log_fd >= 0) {
      ::close(log_fd);
    }
    return Error(ErrorCode::kSpawnFailed,
                 "cannot run " + spec.binary + ": " + std::string(std::strerror(err)));
  }

  std::unique_ptr<LaunchedRouter> router(new LaunchedRouter());
  router->pid_ = pid;
  router->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  router->ready_fd_ = ready[0];
  router->pump_ = std::thread(
      [r = router.get(), fd = out[0], echo = spec.echo, log_fd] { r->pump(fd, echo, log_fd); });
  return router;
}

LaunchedRouter::~LaunchedRouter() {
  if (!exit_code_) {
    stop(std::chrono::seconds(30));
  }
  if (pump_.joinable()) {
    pump_.join();
  }
  if (ready_fd_ >= 0) {
    ::close(ready_fd_);
  }
  if (pidfd_ >= 0) {
    ::close(pidfd_);
  }
}

void LaunchedRouter::pump(int fd, bool echo, int log_fd) {
  std::string partial;
  char buf[16384];
  ssize_t n = 0;
  while ((n = read_some(fd, buf, sizeof buf)) > 0) {
    auto len = static_cast<std::size_t>(n);
    if (echo) {
      write_all(STDOUT_FILENO, buf, len);
    }
    if (log_fd >= 0) {
      write_all(log_fd, buf, len);
    }
    partial.append(buf, len);
    std::size_t start = 0;
    for (auto nl = partial.find('\n'); nl != std::string::npos; nl = partial.find('\n', start)) {
      MutexLock lock(mu_);
      lines_.push_back(partial.substr(start, nl - start));
      if (lines_.size() > kKeptLines) {
        lines_.pop_front();
      }
      start = nl + 1;
    }
    partial.erase(0, start);
  }
  if (!partial.empty()) {
    MutexLock lock(mu_);
    lines_.push_back(partial);
  }
  ::close(fd);
  if (log_fd >= 0) {
    ::close(log_fd);
  }
}

Result<int> LaunchedRouter::wait_ready() {
  std::string text;
  char buf[32];
  ssize_t n = 0;
  while ((n = read_some(ready_fd_, buf, sizeof buf)) > 0) {
    text.append(buf, static_cast<std::size_t>(n));
    if (text.find('\n') != std::string::npos) {
      break;
    }
  }
  int port = 0;
  if (text.find('\n') != std::string::npos) {
    port = std::atoi(text.c_str());
  }
  if (port > 0) {
    return port;
  }
  int code = wait_exit();
  std::string message =
      "lemonade-router exited with code " + std::to_string(code) + " before it listened";
  auto lines = last_lines();
  if (!lines.empty()) {
    message += ": " + lines.back();
  }
  return Error(ErrorCode::kSpawnFailed, message);
}

int LaunchedRouter::wait_exit() {
  if (exit_code_) {
    return *exit_code_;
  }
  int status = 0;
  pid_t r = 0;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  exit_code_ = r == pid_ ? exit_code_of(status) : 1;
  if (pump_.joinable()) {
    pump_.join();  // output ends with the router (its backends hold no copy)
  }
  return *exit_code_;
}

int LaunchedRouter::stop(std::chrono::milliseconds grace) {
  if (exit_code_) {
    return *exit_code_;
  }
  if (pid_ > 1) {
    ::kill(pid_, SIGTERM);
  }
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    int r = 0;
    do {
      r = ::poll(&p, 1, static_cast<int>(grace.count()));
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      ::kill(pid_, SIGKILL);  // its backends die with it (PR_SET_PDEATHSIG)
    }
  }
  return wait_exit();
}

std::vector<std::string> LaunchedRouter::last_lines() const {
  MutexLock lock(mu_);
  return {lines_.begin(), lines_.end()};
}

}  // namespace lemon::cli
