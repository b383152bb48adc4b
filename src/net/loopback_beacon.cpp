#include "lemon/net/loopback_beacon.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

namespace lemon::net {

std::string beacon_payload(const std::string& hostname, int router_port) {
  return R"({"service": "lemonade", "hostname": )" + nlohmann::json(hostname).dump() +
         R"(, "url": "http://127.0.0.1:)" + std::to_string(router_port) + R"(/api/v1/"})";
}

bool reachable_at_ipv4_loopback(const std::string& host) {
  if (host.empty() || host == "localhost" || host == "0.0.0.0" || host == "::" || host == "[::]") {
    return true;
  }
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

LoopbackBeacon::~LoopbackBeacon() {
  stop();
}

Status LoopbackBeacon::start() {
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    return Error(ErrorCode::kInternal,
                 std::string("cannot open the beacon's socket: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { run(); });
  return ok_status();
}

void LoopbackBeacon::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void LoopbackBeacon::run() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) {
    std::strcpy(name, "localhost");
  }
  const std::string payload = beacon_payload(name, settings_.router_port);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(settings_.destination_port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  MutexLock lock(mu_);
  while (!stopping_) {
    // Nobody listening is the usual case: the error is not worth a log line.
    [[maybe_unused]] auto sent = ::sendto(fd_, payload.data(), payload.size(), MSG_DONTWAIT,
                                          reinterpret_cast<const sockaddr*>(&to), sizeof to);
    wake_.wait_for(lock, settings_.interval, [this]() LEMON_REQUIRES(mu_) { return stopping_; });
  }
}

}  // namespace lemon::net
