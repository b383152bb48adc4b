// Which client connections are open, per client address, and which of them
// may be closed to make room (issue #11 §3a): a flood of idle or trickling
// sockets must not keep out a client that sends whole requests.
//
// Policy: a connection is "idle" unless a handler is running for it; its age
// is the time since it was accepted or last finished a request (bytes that
// trickle in do not refresh it). When a new connection's address already has
// its limit, that address's oldest idle connection is closed first; when
// all of them are busy the limit does not refuse (it bounds idle sockets, not
// work: every local client shares 127.0.0.1). At the total limit the oldest
// idle connection of any address is closed, and only when none is idle is
// the new connection refused (503). choose_victim() is that rule as a pure
// function.
//
// Internal to src/net. Thread-safety: every method takes the registry's lock;
// the acceptor admits, connection threads mark and leave. A victim's socket is
// shut down (never closed) under the lock, and a connection leaves before its
// thread closes the socket, so a shut-down descriptor is never a reused one.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace lemon::net::detail {

struct ConnectionLimits {
  int total = 1024;
  int per_address = 256;
};

struct OpenConnection {
  std::uint64_t id = 0;
  std::string address;
  bool busy = false;  // a handler is running for it
  std::chrono::steady_clock::time_point idle_since;
};

enum class Admission { kAdmit, kEvictThenAdmit, kRefuse };

struct AdmissionDecision {
  Admission what = Admission::kAdmit;
  std::uint64_t victim = 0;  // kEvictThenAdmit: the connection to close
};

// Whether a new connection from `address` is admitted, given those open.
AdmissionDecision choose_victim(const std::vector<OpenConnection>& open, const std::string& address,
                                const ConnectionLimits& limits);

class ConnectionRegistry {
 public:
  explicit ConnectionRegistry(ConnectionLimits limits) : limits_(limits) {}

  // Admits a connection (closing an idle one first if needed); its id, or
  // nullopt when it must be refused.
  std::optional<std::uint64_t> admit(int fd, const std::string& address);
  // Marks a handler running (or done). False when the connection was
  // evicted meanwhile: its socket is shut down, so the caller just closes.
  bool set_busy(std::uint64_t id, bool busy);
  // Called before the connection's socket is closed.
  void leave(std::uint64_t id);

  int open() const;

 private:
  struct Entry {
    int fd = -1;
    OpenConnection state;
  };
  ConnectionLimits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, Entry> entries_;
  std::uint64_t next_id_ = 1;
};

}  // namespace lemon::net::detail
