#include "posix_child.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "lemon/core/log.h"
#include "lemon/core/mutex.h"

namespace lemon {

std::string ExitStatus::describe() const {
  if (!signaled) {
    return "exit code " + std::to_string(code);
  }
  const char* name = sigabbrev_np(code);
  return "killed by signal " + std::to_string(code) +
         (name != nullptr ? std::string(" (SIG") + name + ")" : std::string());
}

namespace process_detail {
namespace {

int pidfd_signal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

}  // namespace

PosixChild::PosixChild(pid_t pid, int pidfd, const SpawnSpec& spec)
    : pid_(pid),
      pidfd_(pidfd),
      tag_(spec.log_tag),
      model_(spec.model),
      drop_(spec.drop_lines_containing),
      kept_lines_(spec.kept_lines),
      line_hook_(spec.line_hook) {}

PosixChild::~PosixChild() {
  ::close(pidfd_);
  MutexLock lock(mu_);
  if (input_fd_ >= 0) {
    ::close(input_fd_);
  }
}

void PosixChild::hold_input(int fd) {
  MutexLock lock(mu_);
  input_fd_ = fd;
}

bool PosixChild::write_input(std::string_view text) {
  MutexLock lock(mu_);
  if (input_fd_ < 0 || status_) {
    return false;
  }
  while (!text.empty()) {
    const ssize_t n = ::write(input_fd_, text.data(), text.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;  // full (non-blocking), or the child closed its end
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::optional<ExitStatus> PosixChild::exit_status() const {
  MutexLock lock(mu_);
  return status_;
}

bool PosixChild::wait_exit_until(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  return exited_cv_.wait_until(lock, deadline,
                               [&]() LEMON_REQUIRES(mu_) { return status_.has_value(); });
}

bool PosixChild::wait_output_or_exit_until(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  const std::uint64_t seen = lines_written_;
  exited_cv_.wait_until(lock, deadline, [&]() LEMON_REQUIRES(mu_) {
    return status_.has_value() || lines_written_ != seen;
  });
  return status_.has_value();
}

void PosixChild::signal_group(int sig) {
  // One signal, to the group, which holds the leader (a
  // second SIGTERM makes llama-server quit at once with status 1). The
  // leader is not reaped while status_ is unset (reap() sets it under mu_),
  // so its pid is still its process-group id and cannot be reused. Only a
  // leader that left its group is signalled through its pidfd.
  if (pid_ <= 1 || ::kill(-pid_, sig) != 0) {
    pidfd_signal(pidfd_, sig);
  }
}

void PosixChild::terminate(std::chrono::milliseconds grace) {
  {
    MutexLock lock(mu_);
    if (status_) {
      return;
    }
    signal_group(SIGTERM);
    // A child that ends when its input does (llama-server's router child
    // mode, which waits for it after a SIGTERM) ends on that too.
    if (input_fd_ >= 0) {
      ::close(input_fd_);
      input_fd_ = -1;
    }
  }
  if (wait_exit_until(std::chrono::steady_clock::now() + grace)) {
    return;
  }
  {
    MutexLock lock(mu_);
    if (status_) {
      return;
    }
    logger("process")->warn("{} (pid {}) ignored SIGTERM for {} ms; sending SIGKILL", tag_, pid_,
                            grace.count());
    signal_group(SIGKILL);
  }
  MutexLock lock(mu_);
  exited_cv_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return status_.has_value(); });
}

std::vector<std::string> PosixChild::last_lines(std::size_t n) const {
  MutexLock lock(mu_);
  std::size_t start = lines_.size() > n ? lines_.size() - n : 0;
  return {lines_.begin() + static_cast<std::ptrdiff_t>(start), lines_.end()};
}

void PosixChild::on_exit(std::function<void(const ExitStatus&)> callback) {
  MutexLock lock(mu_);
  if (status_) {
    ExitStatus status = *status_;
    lock.unlock();
    callback(status);
    return;
  }
  on_exit_ = std::move(callback);
}

void PosixChild::append_line(std::string line) {
  if (line_hook_ && line_hook_(line)) {
    logger("output")->debug("[{}] {}", tag_, line);
    return;
  }
  for (const auto& needle : drop_) {
    if (line.find(needle) != std::string::npos) {
      return;
    }
  }
  // A logger of its own, so the log stream's sink can leave these lines to
  // the tap (which gets them at every level, tagged with the model).
  logger("output")->debug("[{}] {}", tag_, line);
  if (!model_.empty()) {
    tap_child_output(model_, line);
  }
  MutexLock lock(mu_);
  lines_.push_back(std::move(line));
  while (lines_.size() > kept_lines_) {
    lines_.pop_front();
  }
  ++lines_written_;
  exited_cv_.notify_all();  // a readiness probe may follow (wait_output_or_exit_until)
}

void PosixChild::reap() {
  std::function<void(const ExitStatus&)> callback;
  ExitStatus status;
  {
    MutexLock lock(mu_);
    if (status_) {
      return;
    }
    siginfo_t info{};
    if (::waitid(P_PIDFD, static_cast<id_t>(pidfd_), &info, WEXITED | WNOWAIT) != 0) {
      return;
    }
    // Whatever the leader left behind in its group dies with it.
    if (pid_ > 1) {
      ::kill(-pid_, SIGKILL);
    }
    siginfo_t reaped{};
    ::waitid(P_PIDFD, static_cast<id_t>(pidfd_), &reaped, WEXITED);
    status.signaled = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
    status.code = info.si_status;
    status_ = status;
    if (input_fd_ >= 0) {
      ::close(input_fd_);
      input_fd_ = -1;
    }
    callback = std::move(on_exit_);
    on_exit_ = nullptr;
  }
  exited_cv_.notify_all();
  logger("process")->debug("{} (pid {}) {}", tag_, pid_, status.describe());
  if (callback) {
    callback(status);
  }
}

}  // namespace process_detail
}  // namespace lemon
