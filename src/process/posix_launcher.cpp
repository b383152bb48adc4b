// The POSIX ProcessLauncher: a spawner thread that forks (so PR_SET_PDEATHSIG
// is tied to a thread living as long as the launcher) and a monitor thread
// that reads every child's output and reaps it through its pidfd.
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <thread>

#include "lemon/core/log.h"
#include "lemon/core/mutex.h"
#include "lemon/core/unique_fd.h"
#include "lemon/process/process_launcher.h"
#include "posix_child.h"

namespace lemon {
namespace {

using process_detail::PosixChild;

// Everything fork's child needs, prepared before fork (no allocation after).
struct ExecImage {
  std::vector<std::string> storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecImage build_exec_image(const SpawnSpec& spec) {
  ExecImage img;
  img.storage.reserve(spec.args.size() + 1 + spec.env.size() + 256);
  img.storage.push_back(spec.executable);
  for (const auto& a : spec.args) {
    img.storage.push_back(a);
  }
  std::size_t argc = img.storage.size();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool overridden = false;
    for (const auto& [key, value] : spec.env) {
      if (entry.size() > key.size() && entry.substr(0, key.size()) == key &&
          entry[key.size()] == '=') {
        overridden = true;
        break;
      }
    }
    if (!overridden) {
      img.storage.emplace_back(entry);
    }
  }
  for (const auto& [key, value] : spec.env) {
    img.storage.push_back(key);
    img.storage.back().append("=").append(value);
  }
  for (std::size_t i = 0; i < img.storage.size(); ++i) {
    (i < argc ? img.argv : img.envp).push_back(img.storage[i].data());
  }
  img.argv.push_back(nullptr);
  img.envp.push_back(nullptr);
  return img;
}

// Runs in the forked child: only async-signal-safe calls.
[[noreturn]] void exec_child(const ExecImage& img, pid_t parent, int in_fd, int out_fd, int err_fd,
                             int report_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(127);  // the router died between fork and prctl
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) {
    ::signal(sig, SIG_DFL);  // ignored dispositions survive exec otherwise
  }
  int input = in_fd >= 0 ? in_fd : ::open("/dev/null", O_RDONLY);
  if (input >= 0) {
    ::dup2(input, STDIN_FILENO);
  }
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < 65536; ++fd) {
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  ::execve(img.argv[0], img.argv.data(), img.envp.data());
  int err = errno;
  ssize_t ignored = ::write(report_fd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// Output pipes are enlarged so a backend never blocks on its logging while
// the monitor reads in batches (see kOutputBatchInterval).
constexpr int kPipeBytes = 1 << 20;
constexpr auto kOutputBatchInterval = std::chrono::milliseconds(5);

Result<Pipe> make_pipe(int read_flags) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Error(ErrorCode::kSpawnFailed, "pipe2(): " + errno_message(errno));
  }
  if (read_flags != 0) {
    ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | read_flags);
    ::fcntl(fds[0], F_SETPIPE_SZ, kPipeBytes);  // best effort (limited by pipe-max-size)
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

struct Spawned {
  std::shared_ptr<PosixChild> child;
  UniqueFd out;
  UniqueFd err;
};

// The child's input pipe (SpawnSpec::input_pipe): the router's end never
// blocks, and neither end leaks into other children (O_CLOEXEC; the child's
// end becomes its stdin through dup2, which clears the flag).
Result<Pipe> make_input_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Error(ErrorCode::kSpawnFailed, "pipe2(): " + errno_message(errno));
  }
  ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Result<Spawned> fork_exec(const SpawnSpec& spec) {
  ExecImage img = build_exec_image(spec);
  auto out = make_pipe(O_NONBLOCK);
  auto err = make_pipe(O_NONBLOCK);
  auto report = make_pipe(0);
  Result<Pipe> input = spec.input_pipe ? make_input_pipe() : Result<Pipe>(Pipe{});
  if (!input.ok()) {
    return std::move(input).error();
  }
  if (!out.ok()) {
    return std::move(out).error();
  }
  if (!err.ok()) {
    return std::move(err).error();
  }
  if (!report.ok()) {
    return std::move(report).error();
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    return Error(ErrorCode::kSpawnFailed, "fork(): " + errno_message(errno));
  }
  if (pid == 0) {
    exec_child(img, parent, input->read.get(), out->write.get(), err->write.get(),
               report->write.get());
  }
  input->read.reset();
  out->write.reset();
  err->write.reset();
  report->write.reset();
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(report->read.get(), &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    std::string what = "cannot execute ";
    what += spec.executable;
    what += ": ";
    what += errno_message(exec_errno);
    bool missing = exec_errno == ENOENT || exec_errno == EACCES || exec_errno == ENOEXEC ||
                   exec_errno == ENOTDIR;
    return Error(missing ? ErrorCode::kBackendBinaryMissing : ErrorCode::kSpawnFailed, what);
  }
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    int e = errno;
    if (pid > 1) {
      ::kill(-pid, SIGKILL);
    }
    ::waitpid(pid, nullptr, 0);
    return Error(ErrorCode::kSpawnFailed, "pidfd_open(): " + errno_message(e));
  }
  Spawned s{std::make_shared<PosixChild>(pid, pidfd, spec), std::move(out->read),
            std::move(err->read)};
  if (input->write.get() >= 0) {
    s.child->hold_input(input->write.release());
  }
  return s;
}

class PosixLauncher final : public ProcessLauncher {
 public:
  PosixLauncher()
      : wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_.get();
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev);
    spawner_ = std::thread([this] { spawner_loop(); });
    monitor_ = std::thread([this] { monitor_loop(); });
  }

  ~PosixLauncher() override {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    spawn_cv_.notify_all();
    spawner_.join();
    std::vector<std::shared_ptr<PosixChild>> alive;
    {
      MutexLock lock(mu_);
      for (auto& [fd, w] : watched_) {
        if (w.child && w.is_pidfd) {
          alive.push_back(w.child);
        }
      }
    }
    for (auto& c : alive) {
      c->terminate(std::chrono::milliseconds(0));
    }
    wake();
    monitor_.join();
  }

  Result<std::shared_ptr<ChildProcess>> spawn(const SpawnSpec& spec) override {
    auto job = std::make_shared<SpawnJob>();
    job->spec = &spec;
    auto future = job->result.get_future();
    {
      MutexLock lock(mu_);
      if (stopping_) {
        return Error(ErrorCode::kShuttingDown, "process launcher is stopping");
      }
      jobs_.push_back(job);
    }
    spawn_cv_.notify_one();
    auto spawned = future.get();
    if (!spawned.ok()) {
      return std::move(spawned).error();
    }
    std::shared_ptr<ChildProcess> child = spawned->child;
    watch(std::move(spawned.value()));
    return child;
  }

 private:
  struct SpawnJob {
    const SpawnSpec* spec = nullptr;
    std::promise<Result<Spawned>> result;
  };

  struct Watched {
    std::shared_ptr<PosixChild> child;
    bool is_pidfd = false;
    std::string partial;  // incomplete output line
  };

  void wake() {
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_.get(), &one, sizeof one);
    (void)ignored;
  }

  void spawner_loop() {
    for (;;) {
      std::shared_ptr<SpawnJob> job;
      {
        MutexLock lock(mu_);
        spawn_cv_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) {
          return;
        }
        job = jobs_.front();
        jobs_.pop_front();
      }
      job->result.set_value(fork_exec(*job->spec));
    }
  }

  void watch(Spawned s) {
    MutexLock lock(mu_);
    for (UniqueFd* fd : {&s.out, &s.err}) {
      add_fd(fd->release(), s.child, false);
    }
    add_fd(s.child->pidfd(), s.child, true);
  }

  void add_fd(int fd, const std::shared_ptr<PosixChild>& child, bool is_pidfd) LEMON_REQUIRES(mu_) {
    watched_[fd] = Watched{child, is_pidfd, {}};
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
  }

  // Reads what is available on an output pipe; returns false at EOF.
  bool drain(int fd, Watched& w) {
    char buf[8192];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        w.partial.append(buf, static_cast<std::size_t>(n));
        std::size_t start = 0;
        for (std::size_t nl; (nl = w.partial.find('\n', start)) != std::string::npos;
             start = nl + 1) {
          std::size_t end = nl > start && w.partial[nl - 1] == '\r' ? nl - 1 : nl;
          w.child->append_line(w.partial.substr(start, end - start));
        }
        w.partial.erase(0, start);
        if (w.partial.size() > 16384) {
          w.child->append_line(std::move(w.partial));
          w.partial.clear();
        }
        continue;
      }
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        return true;
      }
      if (!w.partial.empty()) {
        w.child->append_line(std::move(w.partial));
        w.partial.clear();
      }
      return false;
    }
  }

  void unwatch(int fd, bool close_fd) LEMON_REQUIRES(mu_) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    watched_.erase(fd);
    if (close_fd) {
      ::close(fd);
    }
  }

  void monitor_loop() {
    epoll_event events[64];
    for (;;) {
      int n = ::epoll_wait(epoll_.get(), events, 64, -1);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      bool only_output = n > 0;
      MutexLock lock(mu_);
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        if (fd == wake_.get()) {
          uint64_t v;
          ssize_t ignored = ::read(wake_.get(), &v, sizeof v);
          (void)ignored;
          continue;
        }
        auto it = watched_.find(fd);
        if (it == watched_.end()) {
          continue;
        }
        only_output = only_output && !it->second.is_pidfd;
        if (!it->second.is_pidfd) {
          if (!drain(fd, it->second)) {
            unwatch(fd, true);
          }
          continue;
        }
        // The child exited: take in its last words before reporting the exit.
        auto child = it->second.child;
        for (auto& [ofd, w] : watched_) {
          if (!w.is_pidfd && w.child == child) {
            drain(ofd, w);
          }
        }
        unwatch(fd, false);  // the pidfd is owned by the child object
        lock.unlock();
        child->reap();
        lock.lock();
      }
      if (stopping_ && std::none_of(watched_.begin(), watched_.end(),
                                    [](const auto& kv) { return kv.second.is_pidfd; })) {
        for (auto& [fd, w] : watched_) {
          ::close(fd);
        }
        watched_.clear();
        return;
      }
      lock.unlock();
      if (only_output) {
        // Backends log a line per request; reading each line as it comes
        // would wake this thread (and take a core) once per request. Output
        // is read in batches instead; the large pipes (kPipeBytes) absorb
        // it meanwhile. Exits are still noticed within milliseconds.
        std::this_thread::sleep_for(kOutputBatchInterval);
      }
    }
  }

  UniqueFd wake_;
  UniqueFd epoll_;
  Mutex mu_;
  CondVar spawn_cv_;
  bool stopping_ LEMON_GUARDED_BY(mu_) = false;
  std::deque<std::shared_ptr<SpawnJob>> jobs_ LEMON_GUARDED_BY(mu_);
  std::map<int, Watched> watched_ LEMON_GUARDED_BY(mu_);
  std::thread spawner_;
  std::thread monitor_;
};

}  // namespace

std::unique_ptr<ProcessLauncher> make_posix_process_launcher() {
  return std::make_unique<PosixLauncher>();
}

}  // namespace lemon
