// LoopbackBeacon: tells local clients where the router listens, as Lemonade
// 11's server does (lemonade-sdk/lemonade v11.7.0,
// src/cpp/server/utils/network_beacon.cpp): every `interval`, one UDP
// datagram to 127.0.0.1:`destination_port` (13305, where 11's `lemonade`
// client listens) with
//   {"service": "lemonade", "hostname": "<host name>", "url": "http://127.0.0.1:<port>/api/v1/"}
// It never sends anywhere but loopback: no LAN broadcast.
//
// Thread-safety: start() and stop() from one thread (main); the beacon's
// own thread only sends. The destructor stops it.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"

namespace lemon::net {

struct BeaconSettings {
  int router_port = 0;
  int destination_port = 13305;
  std::chrono::milliseconds interval{2000};
};

// The datagram's text, byte for byte as 11 writes it (the host name as a
// JSON string, so a quote in it cannot break the object).
std::string beacon_payload(const std::string& hostname, int router_port);

// True when a client reaches a router that listens on `host` at
// 127.0.0.1 (the beacon's URL): loopback IPv4, "localhost" or a wildcard.
bool reachable_at_ipv4_loopback(const std::string& host);

class LoopbackBeacon {
 public:
  explicit LoopbackBeacon(BeaconSettings settings) : settings_(settings) {}
  ~LoopbackBeacon();
  LoopbackBeacon(const LoopbackBeacon&) = delete;
  LoopbackBeacon& operator=(const LoopbackBeacon&) = delete;

  // Opens the socket and starts sending (the first datagram at once).
  Status start();
  // Stops sending; returns once the beacon's thread has ended.
  void stop() LEMON_EXCLUDES(mu_);

 private:
  void run() LEMON_EXCLUDES(mu_);

  BeaconSettings settings_;
  int fd_ = -1;
  std::thread thread_;
  Mutex mu_;
  CondVar wake_;
  bool stopping_ LEMON_GUARDED_BY(mu_) = false;
};

}  // namespace lemon::net
