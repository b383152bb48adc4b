#include "lemon/cli/discovery.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "lemon/cli/server_client.h"

namespace lemon::cli {

std::optional<Beacon> parse_beacon(std::string_view datagram, bool complete) {
  const auto j = nlohmann::json::parse(datagram, nullptr, false);
  if (!j.is_object() || !j.contains("url") || !j["url"].is_string()) {
    return std::nullopt;
  }
  if (complete && (!j.contains("service") || !j.contains("hostname"))) {
    return std::nullopt;
  }
  Beacon b;
  b.url = j["url"].get<std::string>();
  if (j.contains("hostname") && j["hostname"].is_string()) {
    b.hostname = j["hostname"].get<std::string>();
  }
  const auto colon = b.url.rfind(':');
  if (colon == std::string::npos) {
    return std::nullopt;
  }
  const std::string digits = b.url.substr(colon + 1, b.url.find('/', colon) - colon - 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  b.port = std::stoi(digits);
  if (b.port < 1 || b.port > 65535) {
    return std::nullopt;
  }
  return b;
}

Result<BeaconReceiver> BeaconReceiver::bind(int port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return Error(ErrorCode::kInternal, std::string("socket: ") + std::strerror(errno));
  }
  BeaconReceiver receiver(fd);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return Error(ErrorCode::kConflict, "Could not bind to beacon port " + std::to_string(port) +
                                           " (" + std::strerror(errno) + ")");
  }
  return receiver;
}

BeaconReceiver::~BeaconReceiver() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

std::optional<Beacon> BeaconReceiver::next(std::chrono::steady_clock::time_point deadline,
                                           bool complete) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return std::nullopt;
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      return std::nullopt;
    }
    char buffer[1024];
    sockaddr_in from{};
    socklen_t from_len = sizeof from;
    const ssize_t n = ::recvfrom(fd_, buffer, sizeof buffer - 1, 0,
                                 reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n <= 0) {
      continue;
    }
    auto beacon = parse_beacon(std::string_view(buffer, static_cast<std::size_t>(n)), complete);
    if (!beacon) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &from.sin_addr, text, sizeof text);
    beacon->source = text;
    return beacon;
  }
}

std::optional<int> discover_router_port(const DiscoveryPlan& plan) {
  for (int port : plan.probe_ports) {
    ServerClient probe("127.0.0.1", port, plan.api_key);
    if (probe.get("/live", std::chrono::milliseconds(500)).status == 200) {
      return port;
    }
  }
  auto receiver = BeaconReceiver::bind(plan.beacon_port);
  if (!receiver.ok()) {
    return std::nullopt;  // another listener holds the port: nothing found, as 11
  }
  const auto deadline = std::chrono::steady_clock::now() + plan.listen;
  while (auto beacon = receiver->next(deadline, /*complete=*/false)) {
    if (beacon->source == "127.0.0.1") {
      return beacon->port;
    }
  }
  return std::nullopt;
}

}  // namespace lemon::cli
