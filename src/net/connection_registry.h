// Which client connections are open, per client address, and which of them
// may be closed to make room: a flood of idle or trickling
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
// the acceptor admits, connection threads mark and leave. A connection whose
// response's last bytes are being written already counts as idle (issue
// #23): a client that has seen a response end must find the connection
// idle from then on. A victim's socket is shut down (never closed) under the
// lock, which wakes its thread if it waits for a request; one still writing
// its last bytes is only forgotten, and its thread shuts the socket down once
// they are out, so no response is cut. A connection leaves before its thread
// closes the socket, so a shut-down descriptor is never a reused one.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include "lemon/core/mutex.h"

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
  // Marks a handler running. False when the connection was evicted
  // meanwhile: its socket is shut down, so the caller just closes.
  bool mark_busy(std::uint64_t id);
  // Its response's last bytes are being written: idle from now on (the
  // handler may still be running), but not to be shut down until they are
  // out.
  void response_ending(std::uint64_t id);
  // They are out. False when the connection was chosen to make room
  // meanwhile: the caller shuts its socket down.
  bool response_ended(std::uint64_t id);
  // Marks the connection idle from now (a response that never ended). False
  // when evicted.
  bool mark_idle(std::uint64_t id);
  // Whether the connection is still admitted (not evicted).
  bool is_open(std::uint64_t id) const;
  // Called before the connection's socket is closed.
  void leave(std::uint64_t id);

  int open() const;

 private:
  struct Entry {
    int fd = -1;
    OpenConnection state;
    bool ending = false;  // its response's last bytes are being written
  };
  ConnectionLimits limits_;
  mutable Mutex mu_;
  std::unordered_map<std::uint64_t, Entry> entries_ LEMON_GUARDED_BY(mu_);
  std::uint64_t next_id_ LEMON_GUARDED_BY(mu_) = 1;
};

}  // namespace lemon::net::detail
