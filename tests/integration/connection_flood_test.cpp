// A flood of idle and trickling sockets from one address cannot keep out a
// client that sends whole requests (issue #11 §3a): the real router, 1,100
// connections from 127.0.0.1, and /health from another loopback address.
// The router's header and keep-alive timeouts are set far beyond the
// client's read guard, so the answer cannot come from a hog timing out: it
// comes from the flood's idle sockets being closed to make room. No
// wall-clock budget is asserted (issue #23).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/raw_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using ConnectionFloodTest = RouterTest;

// A connected TCP socket to 127.0.0.1:port from `source` (any port), or -1.
int connect_from(const char* source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_F(ConnectionFloodTest, IdleAndTricklingSocketsDoNotKeepOutHealth) {
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_max < 2400) {
    GTEST_SKIP() << "needs 2,400 descriptors, the hard limit is " << files.rlim_max;
  }
  files.rlim_cur = files.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  ASSERT_NO_FATAL_FAILURE(start_router({"--header-timeout", "600", "--keep-alive-timeout", "600"}));

  std::vector<int> flood;
  for (int i = 0; i < 1100; ++i) {
    int fd = connect_from("127.0.0.1", port());
    ASSERT_GE(fd, 0) << "connection " << i;
    if (i % 2 == 1) {  // half of them trickle the start of a head
      const std::string part = "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ";
      ASSERT_EQ(::send(fd, part.data(), part.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(part.size()));
    }
    flood.push_back(fd);
  }
  const std::string health =
      "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port()) +
      "\r\nConnection: close\r\n\r\n";
  for (const char* source : {"127.0.0.2", "127.0.0.1"}) {
    int fd = connect_from(source, port());
    ASSERT_GE(fd, 0) << source;
    RawClient client(RawClient::Adopt{fd});
    client.send(health);
    auto r = client.read_response();
    EXPECT_EQ(r.status, 200) << source << ": " << r.head;
  }
  for (int fd : flood) {
    ::close(fd);
  }
}

}  // namespace
}  // namespace lemon::testing
