// serve, status, stop and logs: the commands about the server itself.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "lemon/cli/commands.h"

namespace lemon::cli {
namespace {

// Longer than the router's default --drain-timeout (30 s) plus its backends'
// --stop-grace (5 s).
constexpr auto kStopGrace = std::chrono::seconds(45);

std::string display_host(const std::string& host) {
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "127.0.0.1") {
    return "localhost";
  }
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

bool wait_readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  int r = 0;
  do {
    r = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  ::nanosleep(&ts, nullptr);
}

}  // namespace

int cmd_serve(const CommandLine&, CliContext& ctx) {
  // Ctrl-C, kill and a closed terminal all become a graceful stop of the
  // router; blocked now so that none is lost while it starts.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    sigaddset(&stop_signals, sig);
  }
  ::sigprocmask(SIG_BLOCK, &stop_signals, nullptr);

  auto owned = OwnedServer::start(ctx, /*echo=*/true);
  if (!owned.ok()) {
    if (owned.error().code() == ErrorCode::kConflict) {
      std::cerr << "Error: Another instance of lemonade-server serve is already running.\n"
                << "Only one persistent server can run at a time.\n\n"
                << "To check server status: lemonade-server status\n"
                << "To stop the server: lemonade-server stop\n"
                << std::endl;
      return 1;
    }
    return fail(owned.error().message());
  }
  OwnedServer& server = **owned;
  std::cout << "Lemonade Server v" << LEMON_ROUTER_VERSION << " started on port " << server.port()
            << "\n"
            << "API endpoint: http://" << display_host(ctx.host) << ":" << server.port()
            << "/api/v1\n"
            << "Connect your apps to the endpoint above." << std::endl;

  int sfd = ::signalfd(-1, &stop_signals, SFD_CLOEXEC);
  pollfd fds[2] = {{server.router().exit_fd(), POLLIN, 0}, {sfd, POLLIN, 0}};
  for (;;) {
    int r = ::poll(fds, 2, -1);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info{};
      [[maybe_unused]] auto n = ::read(sfd, &info, sizeof info);
      break;  // stop below
    }
    break;  // the router exited by itself (or `stop` stopped it)
  }
  ::close(sfd);
  int code = server.stop(kStopGrace);
  // A router stopped by a signal we forwarded exits 0; report that as success.
  return code;
}

int cmd_status(const CommandLine& cl, CliContext& ctx) {
  auto running = find_running_server(ctx);
  if (cl.json) {
    nlohmann::json out = {{"running", running.has_value()}};
    if (running) {
      out["port"] = running->port;
      out["pid"] = running->pid > 0 ? nlohmann::json(running->pid) : nlohmann::json(nullptr);
      out["url"] =
          "http://" + display_host(ctx.host) + ":" + std::to_string(running->port) + "/api/v1";
    }
    std::cout << out.dump(2) << std::endl;
    return running ? 0 : 1;
  }
  if (running) {
    std::cout << "Server is running on port " << running->port << std::endl;
    return 0;
  }
  std::cout << "Server is not running" << std::endl;
  return 1;
}

int cmd_stop(const CommandLine&, CliContext& ctx) {
  auto running = find_running_server(ctx);
  if (!running) {
    std::cout << "Lemonade Server is not running" << std::endl;
    return 0;
  }
  if (running->pid <= 1) {
    return fail("the server on port " + std::to_string(running->port) +
                " was not started by lemonade-server; stop it with what started it "
                "(for a service: systemctl stop lemonade-router)");
  }
  std::cout << "Stopping server on port " << running->port << "..." << std::endl;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, running->pid, 0));
  if (::kill(running->pid, SIGTERM) != 0 && errno != ESRCH) {
    int err = errno;
    if (pidfd >= 0) {
      ::close(pidfd);
    }
    return fail("cannot stop process " + std::to_string(running->pid) + ": " + std::strerror(err));
  }
  if (pidfd >= 0) {
    if (!wait_readable(pidfd, kStopGrace)) {
      std::cout << "Timeout expired, forcing termination..." << std::endl;
      ::kill(running->pid, SIGKILL);  // its backends die with it
      wait_readable(pidfd, std::chrono::seconds(10));
    }
    ::close(pidfd);
  }
  // The serve that ran it lets go of the lock as it exits; a `serve` started
  // right after this command must find it free.
  for (int i = 0; i < 1000 && serve_lock_held(ctx.paths.lock_file()); ++i) {
    sleep_ms(10);
  }
  remove_server_record(ctx.paths.pid_file(), running->pid);
  std::cout << "Lemonade Server stopped successfully." << std::endl;
  return 0;
}

int cmd_logs(const CommandLine& cl, CliContext& ctx) {
  const std::string path = ctx.paths.log_file();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail("no server log at " + path +
                " (lemonade-server serve writes it; for a systemd service: journalctl -u "
                "lemonade-router)");
  }
  catch_interrupts();
  int watch = -1;
  if (cl.follow) {
    watch = ::inotify_init1(IN_CLOEXEC);
    if (watch >= 0) {
      ::inotify_add_watch(watch, path.c_str(), IN_MODIFY);
    }
  }
  char buf[65536];
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n > 0) {
      std::cout.write(buf, n);
      offset += n;
      continue;
    }
    std::cout.flush();
    if (!cl.follow || watch < 0 || interrupted()) {
      break;
    }
    char events[4096];
    ssize_t got = ::read(watch, events, sizeof events);  // blocks until the log grows
    if (got < 0 && errno == EINTR && interrupted()) {
      break;
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size < offset) {
      offset = 0;  // a new serve truncated the log
    }
  }
  if (watch >= 0) {
    ::close(watch);
  }
  ::close(fd);
  return 0;
}

}  // namespace lemon::cli
