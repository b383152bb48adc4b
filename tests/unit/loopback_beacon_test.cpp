// The loopback beacon (net/loopback_beacon.h): 11's datagram, byte for
// byte, sent at once and every interval to the configured port on
// 127.0.0.1, and nothing after stop().
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lemon/net/loopback_beacon.h"

namespace lemon::net {
namespace {

// A UDP socket on a free loopback port.
class BeaconListener {
 public:
  BeaconListener() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~BeaconListener() { ::close(fd_); }
  int port() const { return port_; }
  // The next datagram within `ms`, or "" if none came.
  std::string next(int ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, ms) != 1) {
      return "";
    }
    char buf[2048];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(LoopbackBeacon, PayloadIsLemonade11sText) {
  EXPECT_EQ(
      beacon_payload("box", 8000),
      R"({"service": "lemonade", "hostname": "box", "url": "http://127.0.0.1:8000/api/v1/"})");
  const auto parsed = nlohmann::json::parse(beacon_payload("a\"b", 1));
  EXPECT_EQ(parsed["hostname"], "a\"b") << "a quote in the host name stays inside the string";
}

TEST(LoopbackBeacon, OnlyHostsReachedAt127001) {
  for (const char* host : {"", "localhost", "0.0.0.0", "::", "127.0.0.1", "127.0.0.2"}) {
    EXPECT_TRUE(reachable_at_ipv4_loopback(host)) << host;
  }
  for (const char* host : {"::1", "192.168.1.4", "example.org"}) {
    EXPECT_FALSE(reachable_at_ipv4_loopback(host)) << host;
  }
}

TEST(LoopbackBeacon, SendsAtOnceThenEveryIntervalAndStops) {
  BeaconListener listener;
  ASSERT_GT(listener.port(), 0);
  LoopbackBeacon beacon({.router_port = 4321,
                         .destination_port = listener.port(),
                         .interval = std::chrono::milliseconds(50)});
  ASSERT_TRUE(beacon.start().ok());
  const std::string first = listener.next(5000);
  EXPECT_EQ(nlohmann::json::parse(first)["url"], "http://127.0.0.1:4321/api/v1/");
  EXPECT_EQ(listener.next(5000), first) << "a second datagram after the interval";
  beacon.stop();
  while (!listener.next(0).empty()) {
  }  // what was sent before stop() returned
  EXPECT_EQ(listener.next(200), "") << "nothing after stop()";
}

}  // namespace
}  // namespace lemon::net
