// How Lemonade 11's `lemonade` client finds a server without flags
// (lemonade-sdk/lemonade v11.7.0, src/cpp/cli/main.cpp
// discover_local_server_port): GET /live on the default port, and when
// nothing answers, listen up to 3 s on UDP port 13305 for a beacon from
// 127.0.0.1 (net/loopback_beacon.h is the router's side) and take the port
// of its `url`. `scan` listens the same way and lists every beacon heard.
//
// Thread-safety: one thread per receiver; the functions block.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/error.h"

namespace lemon::cli {

// Lemonade 11's client port and beacon port.
inline constexpr int kLemonade11Port = 13305;

struct Beacon {
  std::string hostname;
  std::string url;
  int port = 0;        // from the url: after its last ':' up to the next '/'
  std::string source;  // the sender's address ("127.0.0.1")
};

// A datagram's beacon: a JSON object with a string `url` holding a port
// (and `service` and `hostname` when `complete` is asked for); else nullopt.
std::optional<Beacon> parse_beacon(std::string_view datagram, bool complete);

// A UDP socket on 0.0.0.0:`port` (SO_REUSEADDR, SO_BROADCAST, as 11's).
class BeaconReceiver {
 public:
  static Result<BeaconReceiver> bind(int port);
  BeaconReceiver(BeaconReceiver&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  BeaconReceiver& operator=(BeaconReceiver&&) = delete;
  BeaconReceiver(const BeaconReceiver&) = delete;
  BeaconReceiver& operator=(const BeaconReceiver&) = delete;
  ~BeaconReceiver();

  // The next datagram that parses as a beacon before `deadline`.
  std::optional<Beacon> next(std::chrono::steady_clock::time_point deadline, bool complete);

 private:
  explicit BeaconReceiver(int fd) : fd_(fd) {}
  int fd_ = -1;
};

struct DiscoveryPlan {
  std::vector<int> probe_ports;  // GET /live on 127.0.0.1, in order
  int beacon_port = kLemonade11Port;
  std::chrono::milliseconds listen{3000};
  std::string api_key;
};

// The first probe port that answers /live with 200, else the port of the
// first beacon from 127.0.0.1 within `listen`; nullopt when neither.
std::optional<int> discover_router_port(const DiscoveryPlan& plan);

}  // namespace lemon::cli
