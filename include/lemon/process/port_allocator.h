// PortAllocator: hands out loopback TCP ports for backends.
//
// Ports are scanned round-robin from `first_port` (8001, as Lemonade does) up
// to 32767, from a start offset (the router derives it from its pid, so two
// routers rarely collide), staying below Linux's ephemeral range so that the router's own outgoing
// connections never hold a backend's port. A port is handed out only if it is
// not already handed out and 127.0.0.1:port can be bound right now. The probe
// socket is closed before the child binds, so another program can still take
// the port in between; WrappedServer detects that (port_in_use()) and retries
// with a new port without counting it as a load failure (issue #2 §4).
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <mutex>
#include <set>

#include "lemon/core/error.h"

namespace lemon {

class PortAllocator {
 public:
  // The scan starts at first_port + start_offset (the router passes an offset
  // derived from its pid).
  explicit PortAllocator(int first_port = 8001, int start_offset = 0);
  virtual ~PortAllocator() = default;
  // kSpawnFailed if no port could be obtained. Virtual so tests can hand out
  // a port that is already taken.
  virtual Result<int> acquire();
  virtual void release(int port);

 private:
  const int first_port_;
  std::mutex mu_;
  int next_;              // guarded by mu_
  std::set<int> in_use_;  // guarded by mu_
};

// True when something is listening on (or has bound) 127.0.0.1:port.
bool port_in_use(int port);

}  // namespace lemon
