// PortAllocator and port_in_use(): unique ports while held, reuse after
// release, ports someone else listens on are skipped.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lemon/process/port_allocator.h"
#include "support/loopback_listener.h"
#include "support/process_signal.h"
#include "support/temp_dir.h"

using lemon::testing::is_signalable_pid;
using lemon::testing::signal_process;
using lemon::testing::try_signal_process;

namespace lemon {
namespace {

using testing::LoopbackListener;

// A port in [from, to] that we could listen on just now, with its listener.
std::optional<LoopbackListener> listen_somewhere(int from, int to) {
  for (int p = from; p <= to; ++p) {
    if (LoopbackListener l(p); l.is_open()) {
      return l;
    }
  }
  return std::nullopt;
}

// The first port in [from, to] that something holds on this machine.
std::optional<int> first_port_in_use(int from, int to) {
  for (int p = from; p <= to; ++p) {
    if (port_in_use(p)) {
      return p;
    }
  }
  return std::nullopt;
}

// A base port for this process, away from 8001 and other test runs.
int base_port() {
  return 20000 + static_cast<int>(::getpid() % 10000);
}

TEST(PortInUse, TrueWhileListeningFalseAfterClose) {
  auto listener = listen_somewhere(base_port(), base_port() + 500);
  ASSERT_TRUE(listener.has_value());
  const int port = listener->port();
  EXPECT_TRUE(port_in_use(port));
  listener->close();
  EXPECT_FALSE(port_in_use(port));
}

TEST(PortInUse, TrueForABoundButNotListeningSocket) {
  auto listener = listen_somewhere(base_port(), base_port() + 500);
  ASSERT_TRUE(listener.has_value());
  const int port = listener->port();
  listener->close();
  auto bound = LoopbackListener::bound_only(port);
  ASSERT_TRUE(bound.is_open());
  EXPECT_TRUE(port_in_use(port));
}

TEST(PortAllocator, SkipsAPortSomeoneElseListensOn) {
  auto listener = listen_somewhere(base_port(), base_port() + 500);
  ASSERT_TRUE(listener.has_value());
  const int taken = listener->port();
  PortAllocator ports(taken);  // the first port it would hand out is taken
  auto p = ports.acquire();
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_NE(*p, taken);
  EXPECT_GT(*p, taken);
  EXPECT_FALSE(port_in_use(*p));  // it was bindable when handed out
  ports.release(*p);
}

TEST(PortAllocator, PortsAreUniqueWhileHeld) {
  PortAllocator ports(base_port());
  std::set<int> held;
  for (int i = 0; i < 50; ++i) {
    auto p = ports.acquire();
    ASSERT_TRUE(p.ok()) << p.error().message();
    EXPECT_TRUE(held.insert(*p).second) << "port " << *p << " handed out twice";
    EXPECT_GE(*p, base_port());
    EXPECT_LE(*p, 32767);
  }
  for (int p : held) {
    ports.release(p);
  }
}

TEST(PortAllocator, ConcurrentAcquiresAreUnique) {
  PortAllocator ports(base_port());
  constexpr int kThreads = 8;
  constexpr int kEach = 10;
  std::vector<std::vector<int>> got(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto p = ports.acquire();
        if (p.ok()) {
          got[static_cast<std::size_t>(t)].push_back(*p);
        }
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  std::set<int> all;
  std::size_t total = 0;
  for (const auto& v : got) {
    total += v.size();
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(total, static_cast<std::size_t>(kThreads * kEach));
  EXPECT_EQ(all.size(), total);
}

// The allocator scans first_port..32767 round-robin; starting near the top
// makes the range small enough to exhaust.
TEST(PortAllocator, ExhaustionFailsAndReleasedPortsAreReused) {
  PortAllocator ports(32760);
  std::vector<int> held;
  for (;;) {
    auto p = ports.acquire();
    if (!p.ok()) {
      EXPECT_EQ(p.error().code(), ErrorCode::kSpawnFailed);
      break;
    }
    held.push_back(*p);
    ASSERT_LE(held.size(), 8u) << "more ports than the range holds";
  }
  ASSERT_FALSE(held.empty()) << "no bindable port in 32760-32767 on this machine";
  std::set<int> unique(held.begin(), held.end());
  EXPECT_EQ(unique.size(), held.size());

  const int released = held[held.size() / 2];
  ports.release(released);
  auto again = ports.acquire();
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(*again, released);
  // Still nothing else free.
  auto none = ports.acquire();
  EXPECT_FALSE(none.ok());
  for (int p : held) {
    ports.release(p);
  }
}

TEST(PortAllocator, ScanStartsAtTheOffsetAndWrapsToFirstPort) {
  if (auto busy = first_port_in_use(32760, 32767)) {
    GTEST_SKIP() << "port " << *busy << " is in use on this machine";
  }
  PortAllocator ports(32760, 6);
  std::vector<int> got;
  for (int i = 0; i < 4; ++i) {
    auto p = ports.acquire();
    ASSERT_TRUE(p.ok()) << p.error().message();
    got.push_back(*p);
  }
  EXPECT_EQ(got, (std::vector<int>{32766, 32767, 32760, 32761}));
  for (int p : got) {
    ports.release(p);
  }
}

TEST(PortAllocator, OffsetBeyondTheRangeStartsAtFirstPort) {
  if (auto busy = first_port_in_use(32760, 32767)) {
    GTEST_SKIP() << "port " << *busy << " is in use on this machine";
  }
  PortAllocator ports(32760, 1000);
  auto p = ports.acquire();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, 32760);
  PortAllocator negative(32760, -5);
  auto q = negative.acquire();
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 32760);
}

TEST(PortAllocator, ReleasingAPortNotHeldIsHarmless) {
  PortAllocator ports(base_port());
  ports.release(12345);
  auto p = ports.acquire();
  ASSERT_TRUE(p.ok());
  auto q = ports.acquire();
  ASSERT_TRUE(q.ok());
  EXPECT_NE(*p, *q);
}

TEST(PortAllocator, RoutersSharingALockDirNeverHandOutTheSamePort) {
  testing::TempDir dir("lemon-ports");
  const std::string locks = (dir.path() / "ports").string();
  // Two routers scanning from the same port, as after a pid clash.
  PortAllocator first(base_port(), 0, locks);
  PortAllocator second(base_port(), 0, locks);
  auto a = first.acquire();
  ASSERT_TRUE(a.ok());
  auto b = second.acquire();
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*a, *b) << "the second router took a port the first one reserved";
  first.release(*a);
  PortAllocator third(*a, 0, locks);
  auto c = third.acquire();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, *a) << "a released port is free again";
  struct stat st {};
  ASSERT_EQ(::stat(locks.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u) << "shared like /tmp";
}

TEST(PortAllocator, AReservationDiesWithItsHolder) {
  testing::TempDir dir("lemon-ports");
  const std::string locks = (dir.path() / "ports").string();
  const int port = base_port() + 7;
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    PortAllocator holder(port, 0, locks);
    auto p = holder.acquire();
    char c = p.ok() && *p == port ? 'y' : 'n';
    [[maybe_unused]] auto w = ::write(pipefd[1], &c, 1);
    ::pause();  // killed below
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char got = 0;
  ASSERT_EQ(::read(pipefd[0], &got, 1), 1);
  ::close(pipefd[0]);
  ASSERT_EQ(got, 'y');
  PortAllocator other(port, 0, locks);
  auto busy = other.acquire();
  ASSERT_TRUE(busy.ok());
  EXPECT_NE(*busy, port) << "held by the other process";
  other.release(*busy);
  ASSERT_NO_FATAL_FAILURE(signal_process(child, SIGKILL));
  int status = 0;
  ::waitpid(child, &status, 0);
  PortAllocator after(port, 0, locks);
  auto freed = after.acquire();
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, port) << "the kernel dropped the dead holder's lock";
}

}  // namespace
}  // namespace lemon
