// PortAllocator: hands out loopback TCP ports for backends.
//
// Ports are scanned round-robin from `first_port` (8001, as Lemonade does) up
// to 32767, from a start offset (the router derives it from its pid, so two
// routers rarely collide), staying below Linux's ephemeral range so that the
// router's own outgoing connections never hold a backend's port. A port is
// handed out only if it is not already handed out and 127.0.0.1:port can be
// bound right now.
//
// Routers on one machine also reserve each port they hand out with a lock
// file (flock on <lock_dir>/<port>.lock, held until release(), dropped by the
// kernel if the router dies), and skip ports another router holds. Without
// it, two routers could hand out the same port in the moment before either
// child binds it, and backends that set SO_REUSEPORT (llama-server) would
// then share it. The probe socket is closed before the child binds, so
// another program can still take the port in between; WrappedServer detects
// that and retries with a new port without counting it as a load failure.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <map>
#include <set>
#include <string>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"

namespace lemon {

class PortAllocator {
 public:
  // The scan starts at first_port + start_offset (the router passes an offset
  // derived from its pid). `lock_dir` holds the reservation lock files; empty
  // means no reservations (tests of a single allocator). It is created
  // (mode 1777, as /tmp) when missing; if it cannot be used, ports are handed
  // out without reservations.
  explicit PortAllocator(int first_port = 8001, int start_offset = 0, std::string lock_dir = {});
  virtual ~PortAllocator();
  PortAllocator(const PortAllocator&) = delete;
  PortAllocator& operator=(const PortAllocator&) = delete;
  // kSpawnFailed if no port could be obtained. Virtual so tests can hand out
  // a port that is already taken.
  virtual Result<int> acquire();
  virtual void release(int port);

 private:
  // The reservation of `port`: an flock'd descriptor, -1 when another router
  // holds it; 0 when reservations are off.
  int reserve(int port) LEMON_REQUIRES(mu_);

  const int first_port_;
  const std::string lock_dir_;
  Mutex mu_;
  int next_ LEMON_GUARDED_BY(mu_);
  std::set<int> in_use_ LEMON_GUARDED_BY(mu_);
  std::map<int, int> lock_fds_ LEMON_GUARDED_BY(mu_);  // port -> its lock file
  bool locks_usable_ LEMON_GUARDED_BY(mu_) = true;
};

// True when something is listening on (or has bound) 127.0.0.1:port.
bool port_in_use(int port);

}  // namespace lemon
