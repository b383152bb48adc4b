// process_listens_on / process_alone_listens_on: whether a process (or its
// process group) holds the socket listening on a loopback port, and whether
// it alone does, read from /proc.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lemon/process/process_launcher.h"
#include "lemon/process/socket_owner.h"
#include "support/loopback_listener.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::LoopbackListener;

TEST(ProcessSocketOwner, OwnListenerIsFound) {
  LoopbackListener s;
  ASSERT_TRUE(s.is_open());
  EXPECT_TRUE(process_listens_on(::getpid(), s.port()));
}

TEST(ProcessSocketOwner, Ipv6ListenerIsFound) {
  auto s = LoopbackListener::ipv6();
  if (!s.is_open()) {
    GTEST_SKIP() << "no IPv6 loopback on this machine";
  }
  EXPECT_TRUE(process_listens_on(::getpid(), s.port()));
}

TEST(ProcessSocketOwner, ClosedListenerIsNotFound) {
  LoopbackListener s;
  ASSERT_TRUE(s.is_open());
  const int port = s.port();
  s.close();
  EXPECT_FALSE(process_listens_on(::getpid(), port));
}

TEST(ProcessSocketOwner, BoundButNotListeningIsNotFound) {
  auto s = LoopbackListener::bound_only();
  ASSERT_TRUE(s.is_open());
  EXPECT_FALSE(process_listens_on(::getpid(), s.port()));
}

TEST(ProcessSocketOwner, OtherPortIsNotFound) {
  LoopbackListener s;
  auto other = LoopbackListener::bound_only();  // reserves a port nobody listens on
  ASSERT_TRUE(s.is_open());
  ASSERT_TRUE(other.is_open());
  EXPECT_FALSE(process_listens_on(::getpid(), other.port()));
}

TEST(ProcessSocketOwner, NonexistentProcessIsFalse) {
  LoopbackListener s;
  ASSERT_TRUE(s.is_open());
  EXPECT_FALSE(process_listens_on(0x3fffffff, s.port()));
}

class ProcessSocketOwnerChildren : public ::testing::Test {
 protected:
  void SetUp() override { launcher_ = make_posix_process_launcher(); }

  std::shared_ptr<ChildProcess> spawn_perl(const std::string& script) {
    SpawnSpec spec;
    spec.executable = "/usr/bin/perl";
    spec.args = {"-e", script};
    auto r = launcher_->spawn(spec);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok() ? *r : nullptr;
  }

  // The first line starting with `prefix`, waited for with the child's own
  // blocking wait as pacing (10 s at most).
  static std::string wait_line(ChildProcess& c, const std::string& prefix) {
    const auto deadline = Clock::now() + 10s;
    for (;;) {
      for (const auto& l : c.last_lines(50)) {
        if (l.rfind(prefix, 0) == 0) {
          return l;
        }
      }
      if (Clock::now() >= deadline || !c.running()) {
        return "";
      }
      c.wait_exit_until(Clock::now() + 5ms);
    }
  }

  std::unique_ptr<ProcessLauncher> launcher_;
};

// Perl listens on a kernel-chosen loopback port and prints it.
const char* const kListen =
    "use Socket; $| = 1; socket(S, PF_INET, SOCK_STREAM, 0) or die; "
    "bind(S, pack_sockaddr_in(0, inet_aton('127.0.0.1'))) or die; listen(S, 5) or die; "
    "my ($port) = unpack_sockaddr_in(getsockname(S)); ";

TEST_F(ProcessSocketOwnerChildren, ChildListenerBelongsToTheChildOnly) {
  auto c = spawn_perl(std::string(kListen) + "print \"port $port\\n\"; sleep 30;");
  ASSERT_NE(c, nullptr);
  std::string line = wait_line(*c, "port ");
  ASSERT_FALSE(line.empty()) << "perl did not listen";
  const int port = std::stoi(line.substr(5));
  EXPECT_TRUE(process_listens_on(c->pid(), port));
  EXPECT_FALSE(process_listens_on(::getpid(), port));  // not inherited by us
  c->terminate(1s);
  EXPECT_FALSE(process_listens_on(c->pid(), port));
}

TEST_F(ProcessSocketOwnerChildren, ListenerOfAGroupMemberCountsForTheLeader) {
  // The leader forks; the grandchild (same process group) listens.
  auto c = spawn_perl("$| = 1; my $pid = fork(); if ($pid == 0) { " + std::string(kListen) +
                      "print \"port $port\\n\"; sleep 30; exit 0; } sleep 30;");
  ASSERT_NE(c, nullptr);
  std::string line = wait_line(*c, "port ");
  ASSERT_FALSE(line.empty()) << "perl did not listen";
  const int port = std::stoi(line.substr(5));
  EXPECT_TRUE(process_listens_on(c->pid(), port));
  c->terminate(1s);
}

TEST_F(ProcessSocketOwnerChildren, ListenerOfAnUnrelatedChildDoesNotCount) {
  auto listener = spawn_perl(std::string(kListen) + "print \"port $port\\n\"; sleep 30;");
  auto other = spawn_perl("sleep 30;");
  ASSERT_NE(listener, nullptr);
  ASSERT_NE(other, nullptr);
  std::string line = wait_line(*listener, "port ");
  ASSERT_FALSE(line.empty());
  const int port = std::stoi(line.substr(5));
  EXPECT_FALSE(process_listens_on(other->pid(), port));
  listener->terminate(1s);
  other->terminate(1s);
}

// A listener with SO_REUSEPORT on 127.0.0.1:port (0: the kernel picks);
// returns the descriptor and the port, or -1.
std::pair<int, int> reuse_port_listener(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 5) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return {-1, 0};
  }
  return {fd, ntohs(addr.sin_port)};
}

TEST_F(ProcessSocketOwnerChildren, APortSharedWithSoReusePortIsNotOursAlone) {
  // llama-server (cpp-httplib) sets SO_REUSEPORT: a second server can listen
  // on the same port, and the kernel splits connections between the two.
  auto [fd, port] = reuse_port_listener(0);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(process_alone_listens_on(::getpid(), port));
  auto sharer = spawn_perl(
      "use Socket; $| = 1; socket(S, PF_INET, SOCK_STREAM, 0) or die; "
      "setsockopt(S, SOL_SOCKET, SO_REUSEPORT, 1) or die; "
      "bind(S, pack_sockaddr_in(" +
      std::to_string(port) +
      ", inet_aton('127.0.0.1'))) or die; listen(S, 5) or die; print \"shared\\n\"; sleep 30;");
  ASSERT_NE(sharer, nullptr);
  ASSERT_FALSE(wait_line(*sharer, "shared").empty()) << "perl could not share the port";
  EXPECT_TRUE(process_listens_on(::getpid(), port));
  EXPECT_FALSE(process_alone_listens_on(::getpid(), port));
  EXPECT_FALSE(process_alone_listens_on(sharer->pid(), port));
  sharer->terminate(1s);
  EXPECT_TRUE(process_alone_listens_on(::getpid(), port));
  ::close(fd);
  EXPECT_FALSE(process_alone_listens_on(::getpid(), port));
}

}  // namespace
}  // namespace lemon
