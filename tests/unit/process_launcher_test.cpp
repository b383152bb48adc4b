// The POSIX ProcessLauncher and its ChildProcess: argv without a shell, exit
// statuses, typed exec failures, the bounded line buffer and its filter,
// environment overrides, process groups, blocking waits, exit callbacks,
// SIGTERM -> SIGKILL escalation, and children dying with the launcher or
// the process that owns it.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lemon/process/process_launcher.h"
#include "support/process_signal.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

using lemon::testing::is_signalable_pid;
using lemon::testing::signal_process;
using lemon::testing::try_signal_process;

namespace lemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Lines = std::vector<std::string>;
using testing::ScopedEnv;
using testing::TempDir;

bool group_leader_gone(pid_t pid) {
  return is_signalable_pid(pid) && ::kill(pid, 0) != 0 && errno == ESRCH;
}

class Launcher : public ::testing::Test {
 protected:
  void SetUp() override { launcher_ = make_posix_process_launcher(); }

  std::shared_ptr<ChildProcess> spawn(const std::string& exe, std::vector<std::string> args,
                                      SpawnSpec spec = {}) {
    spec.executable = exe;
    spec.args = std::move(args);
    spec.log_tag = "test";
    auto r = launcher_->spawn(spec);
    EXPECT_TRUE(r.ok()) << exe << ": " << (r.ok() ? "" : r.error().message());
    return r.ok() ? *r : nullptr;
  }

  // Waits for the child to exit (deadline 10 s) and returns its output.
  static Lines run_to_end(ChildProcess& c) {
    EXPECT_TRUE(c.wait_exit_until(Clock::now() + 10s)) << "child " << c.pid() << " still running";
    return c.last_lines(1000);
  }

  // Blocks (paced by wait_exit_until, never a bare sleep) until the child has
  // written a line equal to `line`, or 10 s passed.
  static bool wait_for_line(ChildProcess& c, const std::string& line) {
    const auto deadline = Clock::now() + 10s;
    for (;;) {
      for (const auto& l : c.last_lines(1000)) {
        if (l == line) {
          return true;
        }
      }
      if (Clock::now() >= deadline || !c.running()) {
        return false;
      }
      c.wait_exit_until(Clock::now() + 5ms);
    }
  }

  std::unique_ptr<ProcessLauncher> launcher_;
};

// ---- argv and output ------------------------------------------------------------------

TEST_F(Launcher, EchoOutputIsCaptured) {
  auto c = spawn("/bin/echo", {"hello", "world"});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(run_to_end(*c), (Lines{"hello world"}));
  auto status = c->exit_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(status->signaled);
  EXPECT_EQ(status->code, 0);
}

TEST_F(Launcher, ArgvIsPassedVerbatimWithoutAShell) {
  // printf prints each argument in brackets: a shell would split, expand or
  // run these.
  auto c =
      spawn("/usr/bin/printf", {"[%s]\\n", "a b;c", "$HOME", "*", "'q'", "`id`", "x && y", ""});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(run_to_end(*c),
            (Lines{"[a b;c]", "[$HOME]", "[*]", "['q']", "[`id`]", "[x && y]", "[]"}));
}

TEST_F(Launcher, EchoKeepsAnArgumentWithSpacesAndSemicolonAsOne) {
  auto c = spawn("/bin/echo", {"a b;c"});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(run_to_end(*c), (Lines{"a b;c"}));
}

TEST_F(Launcher, StderrIsCapturedToo) {
  auto c =
      spawn("/usr/bin/perl", {"-e", "$|=1; print STDOUT qq(out\\n); print STDERR qq(err\\n);"});
  ASSERT_NE(c, nullptr);
  Lines lines = run_to_end(*c);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "out"), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "err"), lines.end());
}

TEST_F(Launcher, LastLineWithoutNewlineIsKept) {
  auto c = spawn("/usr/bin/printf", {"one\\ntwo"});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(run_to_end(*c), (Lines{"one", "two"}));
}

// ---- exit statuses ------------------------------------------------------------------------

TEST_F(Launcher, ExitCodeOfFalseIsOne) {
  auto c = spawn("/bin/false", {});
  ASSERT_NE(c, nullptr);
  run_to_end(*c);
  auto status = c->exit_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(status->signaled);
  EXPECT_EQ(status->code, 1);
  EXPECT_EQ(status->describe(), "exit code 1");
  EXPECT_FALSE(c->running());
}

TEST_F(Launcher, ChildKilledBySignalIsSignaled) {
  auto c = spawn("/bin/sleep", {"30"});
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->running());
  c->terminate(0ms);
  auto status = c->exit_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->signaled);
  EXPECT_TRUE(status->code == SIGTERM || status->code == SIGKILL) << status->code;
  EXPECT_NE(status->describe().find("killed by signal " + std::to_string(status->code)),
            std::string::npos)
      << status->describe();
  EXPECT_TRUE(group_leader_gone(c->pid()));
}

TEST(ExitStatusDescribe, NamesTheSignal) {
  EXPECT_EQ((ExitStatus{false, 3}).describe(), "exit code 3");
  EXPECT_EQ((ExitStatus{true, SIGKILL}).describe(), "killed by signal 9 (SIGKILL)");
  EXPECT_EQ((ExitStatus{true, SIGTERM}).describe(), "killed by signal 15 (SIGTERM)");
}

// ---- exec failures ------------------------------------------------------------------------

TEST_F(Launcher, NonexistentExecutableIsBackendBinaryMissing) {
  SpawnSpec spec;
  spec.executable = "/nonexistent/dir/llama-server";
  auto r = launcher_->spawn(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("/nonexistent/dir/llama-server"), std::string::npos)
      << r.error().message();
}

TEST_F(Launcher, NonExecutableFileIsBackendBinaryMissing) {
  TempDir dir("lemon-launcher");
  fs::path file = dir.write("not-executable", "#!/bin/sh\n");
  ::chmod(file.c_str(), 0644);
  SpawnSpec spec;
  spec.executable = file.string();
  auto r = launcher_->spawn(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing) << r.error().message();
}

// ---- the line buffer -------------------------------------------------------------------------

TEST_F(Launcher, LastLinesIsBoundedByKeptLines) {
  SpawnSpec spec;
  spec.kept_lines = 10;
  auto c = spawn("/usr/bin/seq", {"1", "50"}, spec);
  ASSERT_NE(c, nullptr);
  Lines expected;
  for (int i = 41; i <= 50; ++i) {
    expected.push_back(std::to_string(i));
  }
  EXPECT_EQ(run_to_end(*c), expected);
  EXPECT_EQ(c->last_lines(3), (Lines{"48", "49", "50"}));
  EXPECT_EQ(c->last_lines(0), Lines{});
}

TEST_F(Launcher, DroppedLinesAreNotKept) {
  SpawnSpec spec;
  spec.drop_lines_containing = {"GET /health ", "5"};
  auto c = spawn(
      "/usr/bin/printf",
      {"%s\\n", "start", "GET /health 127.0.0.1 200", "14", "15", "GET /healthz 1", "end"}, spec);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(run_to_end(*c), (Lines{"start", "14", "GET /healthz 1", "end"}));
}

TEST_F(Launcher, DroppedLinesDoNotUseUpTheBound) {
  SpawnSpec spec;
  spec.kept_lines = 3;
  spec.drop_lines_containing = {"noise"};
  auto c =
      spawn("/usr/bin/printf", {"%s\\n", "a", "b", "c", "noise 1", "noise 2", "noise 3"}, spec);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(run_to_end(*c), (Lines{"a", "b", "c"}));
}

// ---- environment -------------------------------------------------------------------------------

TEST_F(Launcher, EnvOverridesAreVisibleToTheChild) {
  std::shared_ptr<ChildProcess> c;
  {
    ScopedEnv vars;
    ASSERT_TRUE(vars.set("LEMON_LAUNCHER_TEST_INHERITED", "from-parent"));
    ASSERT_TRUE(vars.set("LEMON_LAUNCHER_TEST_OVERRIDDEN", "old"));
    SpawnSpec spec;
    spec.env = {{"LEMON_LAUNCHER_TEST_NEW", "hello world"},
                {"LEMON_LAUNCHER_TEST_OVERRIDDEN", "new"}};
    c = spawn("/usr/bin/env", {}, spec);
  }
  ASSERT_NE(c, nullptr);
  Lines lines = run_to_end(*c);
  auto count = [&](const std::string& entry) {
    return std::count(lines.begin(), lines.end(), entry);
  };
  EXPECT_EQ(count("LEMON_LAUNCHER_TEST_NEW=hello world"), 1);
  EXPECT_EQ(count("LEMON_LAUNCHER_TEST_OVERRIDDEN=new"), 1);
  EXPECT_EQ(count("LEMON_LAUNCHER_TEST_OVERRIDDEN=old"), 0);
  EXPECT_EQ(count("LEMON_LAUNCHER_TEST_INHERITED=from-parent"), 1);
  // A variable whose name merely starts with an overridden one is kept.
  int prefixed = 0;
  for (const auto& l : lines) {
    prefixed += l.rfind("LEMON_LAUNCHER_TEST_OVERRIDDEN", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(prefixed, 1);
}

TEST_F(Launcher, EnvOverrideDoesNotDropVariablesSharingAPrefix) {
  std::shared_ptr<ChildProcess> c;
  {
    ScopedEnv vars;
    ASSERT_TRUE(vars.set("LEMON_LAUNCHER_TEST_AB", "keep-me"));
    SpawnSpec spec;
    spec.env = {{"LEMON_LAUNCHER_TEST_A", "x"}};
    c = spawn("/usr/bin/env", {}, spec);
  }
  ASSERT_NE(c, nullptr);
  Lines lines = run_to_end(*c);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "LEMON_LAUNCHER_TEST_AB=keep-me"), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "LEMON_LAUNCHER_TEST_A=x"), lines.end());
}

// ---- process group, waits, callbacks ------------------------------------------------------------

TEST_F(Launcher, ChildLeadsItsOwnProcessGroup) {
  auto c = spawn("/bin/sleep", {"30"});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(::getpgid(c->pid()), c->pid());
  EXPECT_NE(::getpgid(c->pid()), ::getpgid(0));
  c->terminate(1s);
}

TEST_F(Launcher, StdinIsNotInheritedFromTheRouter) {
  // cat reads stdin to EOF: with /dev/null it exits at once.
  auto c = spawn("/bin/cat", {});
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->wait_exit_until(Clock::now() + 10s));
  EXPECT_EQ(c->exit_status()->code, 0);
}

TEST_F(Launcher, WaitExitUntilTimesOutForARunningChild) {
  auto c = spawn("/bin/sleep", {"30"});
  ASSERT_NE(c, nullptr);
  const auto t0 = Clock::now();
  EXPECT_FALSE(c->wait_exit_until(t0 + 100ms));
  EXPECT_GE(Clock::now() - t0, 100ms);
  EXPECT_TRUE(c->running());
  EXPECT_EQ(c->exit_status(), std::nullopt);
  c->terminate(1s);
}

TEST_F(Launcher, WaitExitUntilReturnsPromptlyAfterExit) {
  auto c = spawn("/bin/sleep", {"30"});
  ASSERT_NE(c, nullptr);
  ASSERT_NO_FATAL_FAILURE(signal_process(c->pid(), SIGKILL));
  const auto t0 = Clock::now();
  EXPECT_TRUE(c->wait_exit_until(t0 + 120s));
  // Woken by the exit, not by the deadline (a margin no load reaches).
  EXPECT_LT(Clock::now() - t0, 60s);
  auto status = c->exit_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->signaled);
  EXPECT_EQ(status->code, SIGKILL);
  // Already exited: returns true at once even with a past deadline.
  EXPECT_TRUE(c->wait_exit_until(Clock::now() - 1s));
}

TEST_F(Launcher, OnExitFiresOnceOnTheMonitorThread) {
  auto c = spawn("/bin/sleep", {"30"});
  ASSERT_NE(c, nullptr);
  std::atomic<int> calls{0};
  std::promise<ExitStatus> first;
  const auto test_thread = std::this_thread::get_id();
  std::atomic<bool> on_test_thread{false};
  c->on_exit([&](const ExitStatus& s) {
    if (std::this_thread::get_id() == test_thread) {
      on_test_thread = true;
    }
    if (++calls == 1) {
      first.set_value(s);
    }
  });
  ASSERT_NO_FATAL_FAILURE(signal_process(c->pid(), SIGKILL));
  auto fut = first.get_future();
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  ExitStatus s = fut.get();
  EXPECT_TRUE(s.signaled);
  EXPECT_EQ(s.code, SIGKILL);
  c->terminate(0ms);  // no second exit
  launcher_.reset();  // joins the monitor thread: every callback has run
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(on_test_thread.load());
}

TEST_F(Launcher, OnExitRegisteredAfterExitRunsImmediately) {
  auto c = spawn("/bin/false", {});
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->wait_exit_until(Clock::now() + 10s));
  int calls = 0;
  std::thread::id ran_on;
  ExitStatus got;
  c->on_exit([&](const ExitStatus& s) {
    ++calls;
    ran_on = std::this_thread::get_id();
    got = s;
  });
  EXPECT_EQ(calls, 1);  // synchronously, before on_exit returned
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_FALSE(got.signaled);
  EXPECT_EQ(got.code, 1);
}

// ---- terminate ---------------------------------------------------------------------------------

const std::vector<std::string> kIgnoreSigterm = {
    "-e", "$SIG{TERM} = 'IGNORE'; $| = 1; print \"ready\\n\"; sleep 30;"};

TEST_F(Launcher, TerminateEscalatesToSigkillWhenSigtermIsIgnored) {
  auto c = spawn("/usr/bin/perl", kIgnoreSigterm);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(wait_for_line(*c, "ready")) << "perl did not start";
  const auto t0 = Clock::now();
  c->terminate(200ms);
  const auto took = Clock::now() - t0;
  auto status = c->exit_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->signaled);
  EXPECT_EQ(status->code, SIGKILL);
  EXPECT_GE(took, 200ms);  // SIGTERM was given its grace period, and no more:
  EXPECT_LT(took, 30s);    // perl would have slept 30 s
  EXPECT_TRUE(group_leader_gone(c->pid()));
}

TEST_F(Launcher, TerminateStopsAtSigtermWhenTheChildObeys) {
  auto c = spawn("/bin/sleep", {"600"});
  ASSERT_NE(c, nullptr);
  const auto t0 = Clock::now();
  c->terminate(120s);
  EXPECT_LT(Clock::now() - t0, 60s);  // did not wait out the grace period
  auto status = c->exit_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->signaled);
  EXPECT_EQ(status->code, SIGTERM);
}

TEST_F(Launcher, ConcurrentTerminatesAllReturnOnceTheChildIsGone) {
  auto c = spawn("/usr/bin/perl", kIgnoreSigterm);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(wait_for_line(*c, "ready"));
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::atomic<int> returned_running{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      c->terminate(100ms);
      if (c->running()) {
        ++returned_running;
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(returned_running.load(), 0);
  EXPECT_TRUE(group_leader_gone(c->pid()));
}

TEST_F(Launcher, TerminateKillsTheWholeProcessGroup) {
  // perl forks a grandchild in the same group; terminating the leader must
  // take the grandchild with it.
  auto c = spawn("/usr/bin/perl", {"-e",
                                   "$| = 1; my $p = fork(); if ($p == 0) { sleep 30; exit 0; } "
                                   "print \"child $p\\n\"; sleep 30;"});
  ASSERT_NE(c, nullptr);
  pid_t grandchild = 0;
  const auto deadline = Clock::now() + 10s;
  while (grandchild == 0 && Clock::now() < deadline) {
    for (const auto& l : c->last_lines(10)) {
      if (l.rfind("child ", 0) == 0) {
        grandchild = static_cast<pid_t>(std::stoi(l.substr(6)));
      }
    }
    if (grandchild == 0) {
      c->wait_exit_until(Clock::now() + 5ms);
    }
  }
  ASSERT_GT(grandchild, 0);
  int gc_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, grandchild, 0));
  ASSERT_GE(gc_pidfd, 0);
  c->terminate(1s);
  // The grandchild is not ours to reap; its pidfd turns readable when it dies.
  pollfd p{gc_pidfd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 10000), 1) << "grandchild " << grandchild << " survived";
  ::close(gc_pidfd);
}

// ---- children do not outlive the launcher
// ---------------------------------------------------------

TEST_F(Launcher, DestroyingTheLauncherKillsItsChildren) {
  auto sleeper = spawn("/bin/sleep", {"30"});
  auto stubborn = spawn("/usr/bin/perl", kIgnoreSigterm);
  ASSERT_NE(sleeper, nullptr);
  ASSERT_NE(stubborn, nullptr);
  ASSERT_TRUE(wait_for_line(*stubborn, "ready"));
  const pid_t a = sleeper->pid();
  const pid_t b = stubborn->pid();
  launcher_.reset();
  EXPECT_FALSE(sleeper->running());
  EXPECT_FALSE(stubborn->running());
  EXPECT_TRUE(group_leader_gone(a));
  EXPECT_TRUE(group_leader_gone(b));
}

// PR_SET_PDEATHSIG: when the process owning the launcher dies without any
// cleanup, its children get SIGKILL from the kernel. The owner here is a
// forked copy of this test process that spawns a SIGTERM-ignoring child,
// reports its pid through a pipe and _exit()s without destroying anything.
TEST(LauncherOwnerDeath, ChildrenDieWithTheProcessThatSpawnedThem) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const pid_t owner = ::fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    ::close(fds[0]);
    auto launcher = make_posix_process_launcher();
    SpawnSpec spec;
    spec.executable = "/usr/bin/perl";
    // Writes nothing (a write to the dead owner's pipe would end it with
    // SIGPIPE) and ignores the signals a dying parent might otherwise cause.
    spec.args = {"-e", "$SIG{TERM} = $SIG{HUP} = $SIG{PIPE} = 'IGNORE'; sleep 30;"};
    auto r = launcher->spawn(spec);
    pid_t pid = r.ok() ? (*r)->pid() : 0;
    ssize_t n = ::write(fds[1], &pid, sizeof pid);
    ::_exit(n == sizeof pid && pid > 0 ? 0 : 3);  // no destructors run
  }
  ::close(fds[1]);
  pid_t pid = 0;
  ssize_t n = ::read(fds[0], &pid, sizeof pid);
  ::close(fds[0]);
  int owner_status = 0;
  ASSERT_EQ(::waitpid(owner, &owner_status, 0), owner);
  ASSERT_TRUE(WIFEXITED(owner_status));
  ASSERT_EQ(WEXITSTATUS(owner_status), 0);
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof pid));
  ASSERT_GT(pid, 0);

  // The spawned child is not ours to reap; its pidfd turns readable when it
  // dies.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    EXPECT_EQ(errno, ESRCH);  // already dead and reaped
    return;
  }
  pollfd p{pidfd, POLLIN, 0};
  int ready = ::poll(&p, 1, 10000);
  ::close(pidfd);
  if (ready != 1) {
    try_signal_process(pid, SIGKILL);  // do not leak it
  }
  EXPECT_EQ(ready, 1) << "child " << pid << " outlived the process that spawned it";
}

}  // namespace
}  // namespace lemon

namespace lemon {
namespace {

// ---- the input pipe and the line hook (llama-server's child mode) --------------------

TEST_F(Launcher, AChildWithoutAnInputPipeReadsEndOfFileAtOnce) {
  // cat copies its stdin: /dev/null ends at once.
  auto c = spawn("/bin/cat", {});
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(run_to_end(*c).empty());
  EXPECT_FALSE(c->write_input("ignored\n")) << "there is no pipe to write to";
}

TEST_F(Launcher, TheInputPipeCarriesWritesAndEndsWhenTheRouterSideCloses) {
  SpawnSpec spec;
  spec.input_pipe = true;
  // head -n 1 copies one line and exits: the pipe stays open until then.
  auto c = spawn("/usr/bin/head", {"-n", "1"}, spec);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->running()) << "it waits for its input";
  ASSERT_TRUE(c->write_input("cmd_router_to_child:exit\n"));
  EXPECT_EQ(run_to_end(*c), (Lines{"cmd_router_to_child:exit"}));
  EXPECT_FALSE(c->write_input("more\n")) << "the child is gone";
}

TEST_F(Launcher, TheLineHookTakesItsLinesOutOfTheBuffer) {
  SpawnSpec spec;
  std::vector<std::string> taken;  // the monitor thread's, read after the exit
  spec.line_hook = [&taken](const std::string& line) {
    if (!line.starts_with("state:")) {
      return false;
    }
    taken.push_back(line);
    return true;
  };
  auto c = spawn("/usr/bin/printf", {"a\\nstate:1\\nb\\nstate:2\\n"}, spec);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(run_to_end(*c), (Lines{"a", "b"}));
  EXPECT_EQ(taken, (Lines{"state:1", "state:2"}));
}

}  // namespace
}  // namespace lemon
