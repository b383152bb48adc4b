#include "support/router_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <gtest/gtest.h>

#include "support/process_signal.h"
#include "support/process_watch.h"
#include "support/sanitizer_env.h"

namespace lemon::testing {
namespace {

constexpr std::chrono::milliseconds kReapWait{10000};
constexpr std::string_view kListening = "listening on http://";

// In a forked child: a mount namespace of its own in which each folder of
// `dirs` is bound onto itself read-only. False on the first failure, with
// errno set. Async-signal-safe calls only.
bool mount_read_only(const std::vector<const char*>& dirs) {
  if (dirs.empty()) {
    return true;
  }
  if (::unshare(CLONE_NEWNS) != 0 ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return false;
  }
  for (const char* dir : dirs) {
    if (::mount(dir, dir, nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, dir, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
      return false;
    }
  }
  return true;
}

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void exec_router(const std::vector<char*>& argv, const std::vector<char*>& envp,
                              int out_fd, int err_fd, pid_t parent,
                              const std::vector<const char*>& read_only) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the router dies with the test
  if (::getppid() != parent) {
    ::_exit(127);
  }
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    ::dup2(devnull, STDIN_FILENO);
  }
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  if (!mount_read_only(read_only)) {
    static const char kWhy[] = "test harness: cannot mount a folder read-only\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, kWhy, sizeof kWhy - 1);
    ::_exit(126);
  }
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(argv[0], argv.data(), envp.data());
  ::_exit(127);
}

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

}  // namespace

std::string router_binary() {
  return LEMON_ROUTER_BIN;
}

std::string can_mount_read_only() {
  const char* dir = "/tmp";
  const pid_t child = ::fork();
  if (child < 0) {
    return std::string("fork: ") + std::strerror(errno);
  }
  if (child == 0) {
    ::_exit(mount_read_only({dir}) ? 0 : (errno & 0x7f));
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return {};
  }
  return std::string("unshare(CLONE_NEWNS) or a read-only bind mount failed: ") +
         (WIFEXITED(status) ? std::strerror(WEXITSTATUS(status)) : "the probe was killed");
}

RouterProcess::RouterProcess(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env,
                             const std::vector<std::string>& read_only, const std::string& binary) {
  std::vector<const char*> read_only_dirs;
  for (const auto& dir : read_only) {
    read_only_dirs.push_back(dir.c_str());
  }
  std::vector<std::string> storage;
  storage.push_back(binary.empty() ? router_binary() : binary);
  storage.insert(storage.end(), args.begin(), args.end());
  const std::size_t argc = storage.size();
  for (const auto& [key, value] : with_sanitizer_options(env)) {
    std::string assignment = key;
    assignment += '=';
    assignment += value;
    storage.push_back(std::move(assignment));
  }
  std::vector<char*> argv;
  std::vector<char*> envp;
  for (std::size_t i = 0; i < storage.size(); ++i) {
    (i < argc ? argv : envp).push_back(storage[i].data());
  }
  argv.push_back(nullptr);
  envp.push_back(nullptr);

  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    exec_router(argv, envp, out[1], err[1], parent, read_only_dirs);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  reader_ = std::thread([this] { read_output(); });
}

RouterProcess::~RouterProcess() {
  auto survivors = kill_and_reap();
  for (pid_t p : survivors) {
    ADD_FAILURE() << "backend pid " << p << " was still running 10 s after the router died";
  }
  if (stop_fd_ >= 0) {
    std::uint64_t one = 1;
    ssize_t ignored = ::write(stop_fd_, &one, sizeof one);
    (void)ignored;
  }
  if (reader_.joinable()) {
    reader_.join();
  }
  close_fd(out_fd_);
  close_fd(err_fd_);
  close_fd(stop_fd_);
}

void RouterProcess::append(std::string& partial, std::vector<std::string>& lines, const char* data,
                           std::size_t n) {
  partial.append(data, n);
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = partial.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    std::lock_guard lock(mu_);
    lines.push_back(std::move(line));
  }
  partial.erase(0, start);
}

void RouterProcess::read_output() {
  bool out_open = true;
  bool err_open = true;
  char buf[8192];
  while (out_open || err_open) {
    pollfd fds[3] = {{out_open ? out_fd_ : -1, POLLIN, 0},
                     {err_open ? err_fd_ : -1, POLLIN, 0},
                     {stop_fd_, POLLIN, 0}};
    int n = ::poll(fds, 3, -1);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    if (fds[2].revents != 0) {
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0) {
        continue;
      }
      {
        std::lock_guard lock(mu_);
        reading_ = true;
      }
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        auto count = static_cast<std::size_t>(got);
        if (i == 0) {
          append(out_partial_, out_lines_, buf, count);
        } else {
          append(err_partial_, err_lines_, buf, count);
        }
      } else if (got == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
      {
        std::lock_guard lock(mu_);
        reading_ = false;
      }
      cv_.notify_all();
    }
  }
  std::lock_guard lock(mu_);
  if (!err_partial_.empty()) {
    err_lines_.push_back(err_partial_);
  }
  if (!out_partial_.empty()) {
    out_lines_.push_back(out_partial_);
  }
  eof_ = true;
  cv_.notify_all();
}

int RouterProcess::wait_listening(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  std::size_t checked = 0;
  cv_.wait_for(lock, timeout, [&] {
    for (; checked < err_lines_.size(); ++checked) {
      const std::string& line = err_lines_[checked];
      auto at = line.find(kListening);
      if (at == std::string::npos) {
        continue;
      }
      auto colon = line.find(':', at + kListening.size());
      if (colon != std::string::npos) {
        port_ = std::atoi(line.c_str() + colon + 1);
        return true;
      }
    }
    return eof_;
  });
  return port_;
}

bool RouterProcess::wait_for_log(std::string_view needle, int occurrences,
                                 std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  int seen = 0;
  std::size_t checked = 0;
  return cv_.wait_for(lock, timeout, [&] {
    for (; checked < err_lines_.size(); ++checked) {
      if (err_lines_[checked].find(needle) != std::string::npos) {
        ++seen;
      }
    }
    return seen >= occurrences;
  });
}

void RouterProcess::catch_up(std::unique_lock<std::mutex>& lock) const {
  auto unread = [](int fd) {
    int n = 0;
    return fd >= 0 && ::ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
  };
  cv_.wait_for(lock, std::chrono::seconds(5),
               [&] { return eof_ || (!reading_ && unread(err_fd_) == 0 && unread(out_fd_) == 0); });
}

int RouterProcess::count_log(std::string_view needle) const {
  std::unique_lock lock(mu_);
  catch_up(lock);
  int n = 0;
  for (const auto& line : err_lines_) {
    n += line.find(needle) != std::string::npos ? 1 : 0;
  }
  return n;
}

std::vector<std::string> RouterProcess::log_lines() const {
  std::unique_lock lock(mu_);
  catch_up(lock);
  return err_lines_;
}

std::string RouterProcess::log_text() const {
  std::string text;
  for (const auto& line : log_lines()) {
    text += line + "\n";
  }
  return text;
}

std::string RouterProcess::stdout_text() const {
  std::unique_lock lock(mu_);
  catch_up(lock);
  std::string text;
  for (const auto& line : out_lines_) {
    text += line + "\n";
  }
  return text;
}

void RouterProcess::signal(int sig) const {
  if (!exit_) {
    signal_process(pid_, sig);
  }
}

std::optional<ExitInfo> RouterProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (!exit_) {
    if (!PidWatch(pid_).wait_exit(timeout)) {
      return std::nullopt;
    }
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    ExitInfo info;
    info.exited = WIFEXITED(status);
    info.code = info.exited ? WEXITSTATUS(status) : -1;
    info.signaled = WIFSIGNALED(status);
    info.signal = info.signaled ? WTERMSIG(status) : 0;
    exit_ = info;
  }
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return eof_; });
  return exit_;
}

std::vector<pid_t> RouterProcess::backend_pids() const {
  return exit_ ? std::vector<pid_t>{} : descendants_of(pid_);
}

std::vector<pid_t> RouterProcess::kill_and_reap() {
  std::vector<pid_t> survivors;
  if (exit_ || pid_ <= 0) {
    return survivors;
  }
  std::vector<PidWatch> backends;
  for (pid_t p : descendants_of(pid_)) {
    backends.emplace_back(p);
  }
  try_signal_process(pid_, SIGKILL);
  wait_exit(kReapWait);
  for (auto& w : backends) {
    if (!w.wait_exit(kReapWait)) {
      try_signal_process(w.pid(), SIGKILL);
      survivors.push_back(w.pid());
    }
  }
  return survivors;
}

}  // namespace lemon::testing
