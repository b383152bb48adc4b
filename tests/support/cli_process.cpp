#include "support/cli_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/process_signal.h"
#include "support/sanitizer_env.h"

namespace lemon::testing {
namespace {

std::vector<std::string> env_strings(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) {
    std::string entry = k;
    entry += '=';
    entry += v;
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string cli_binary() {
  return LEMON_CLI_BIN;
}

std::string lemonade_binary() {
  return LEMON_LEMONADE_BIN;
}

std::string lemond_binary() {
  return LEMON_LEMOND_BIN;
}

CliProcess::CliProcess(const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& env, bool terminal,
                       const std::string& binary)
    : terminal_(terminal) {
  std::vector<std::string> argv_strings = {binary.empty() ? cli_binary() : binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_list = env_strings(with_sanitizer_options(env));
  auto argv = pointers(argv_strings);
  auto envp = pointers(env_list);
  if (terminal) {
    int master = -1;
    winsize ws{};
    ws.ws_row = 40;
    ws.ws_col = 160;
    pid_ = ::forkpty(&master, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    in_fd_ = master;
    out_fd_ = ::dup(master);
  } else {
    int in[2];
    int out[2];
    int err[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
        ::pipe2(err, O_CLOEXEC) != 0) {
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    in_fd_ = in[1];
    out_fd_ = out[0];
    err_fd_ = err[0];
  }
  reader_ = std::thread([this] { read_output(); });
}

CliProcess::~CliProcess() {
  if (!code_ && pid_ > 0) {
    try_signal_process(pid_, SIGKILL);
    wait_exit(std::chrono::seconds(30));
  }
  if (reader_.joinable()) {
    reader_.join();
  }
  for (int fd : {in_fd_, out_fd_, err_fd_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void CliProcess::read_output() {
  std::vector<pollfd> fds = {{out_fd_, POLLIN, 0}};
  if (err_fd_ >= 0) {
    fds.push_back({err_fd_, POLLIN, 0});
  }
  std::size_t open = fds.size();
  char buf[8192];
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {  // EOF, or EIO once a terminal's last writer is gone
        fds[i].fd = -1;
        --open;
        continue;
      }
      std::lock_guard lock(mu_);
      (i == 0 ? out_ : err_).append(buf, static_cast<std::size_t>(n));
      cv_.notify_all();
    }
  }
  std::lock_guard lock(mu_);
  eof_ = true;
  cv_.notify_all();
}

std::optional<std::size_t> CliProcess::wait_for(std::string_view needle, std::size_t from,
                                                std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  std::optional<std::size_t> found;
  cv_.wait_for(lock, timeout, [&] {
    if (from <= out_.size()) {
      auto at = out_.find(needle, from);
      if (at != std::string::npos) {
        found = at + needle.size();
        return true;
      }
    }
    return eof_;
  });
  return found;
}

std::string CliProcess::out() const {
  std::lock_guard lock(mu_);
  return out_;
}

std::string CliProcess::err() const {
  std::lock_guard lock(mu_);
  return err_;
}

void CliProcess::write(std::string_view text) const {
  while (!text.empty()) {
    ssize_t n = ::write(in_fd_, text.data(), text.size());
    if (n <= 0) {
      return;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

void CliProcess::close_stdin() {
  if (!terminal_ && in_fd_ >= 0) {
    ::close(in_fd_);
    in_fd_ = -1;
  }
}

void CliProcess::signal(int sig) const {
  signal_process(pid_, sig);
}

std::optional<int> CliProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (code_) {
    return code_;
  }
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
    ::close(pidfd);
    if (r <= 0) {
      return std::nullopt;
    }
  }
  int status = 0;
  if (::waitpid(pid_, &status, 0) != pid_) {
    return std::nullopt;
  }
  code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!terminal_) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return eof_; });
  }
  return code_;
}

CliResult run_cli(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env, const std::string& input,
                  const std::string& binary) {
  CliProcess p(args, env, false, binary);
  p.write(input);
  p.close_stdin();
  CliResult r;
  auto code = p.wait_exit();
  r.code = code.value_or(-1);
  r.out = p.out();
  r.err = p.err();
  return r;
}

std::vector<pid_t> routers_with_cache(const std::string& cache_dir) {
  namespace fs = std::filesystem;
  std::vector<pid_t> found;
  std::error_code ec;
  const std::string wanted = "LEMONADE_CACHE_DIR=" + cache_dir;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::error_code link_ec;
    auto exe = fs::read_symlink(e.path() / "exe", link_ec);
    if (link_ec || exe.filename() != "lemonade-router") {
      continue;
    }
    std::ifstream environ(e.path() / "environ");
    std::stringstream text;
    text << environ.rdbuf();
    std::string entries = text.str();
    std::size_t start = 0;
    while (start < entries.size()) {
      auto end = entries.find('\0', start);
      if (entries.compare(start, (end == std::string::npos ? entries.size() : end) - start,
                          wanted) == 0) {
        found.push_back(static_cast<pid_t>(std::stoi(name)));
        break;
      }
      if (end == std::string::npos) {
        break;
      }
      start = end + 1;
    }
  }
  return found;
}

std::vector<pid_t> wait_routers_gone(const std::string& cache_dir,
                                     std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (pid_t pid : routers_with_cache(cache_dir)) {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) {
      continue;  // already gone
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{pidfd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    ::close(pidfd);
  }
  return routers_with_cache(cache_dir);
}

}  // namespace lemon::testing
