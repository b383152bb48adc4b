// Which process is listening on a loopback TCP port (Linux: sock_diag for
// the listening sockets, /proc/<pid>/fd for who holds them).
//
// A backend's readiness probe must reach *that* backend: if another program
// took the port between our check and the child's bind, the probe would get
// its answer instead. WrappedServer asks this before trusting a probe.
//
// Thread-safety: pure apart from reading /proc.
#pragma once

#include <sys/types.h>

namespace lemon {

// True when a socket listening on TCP `port` (IPv4 or IPv6) is open in
// process `pid` or in any process of the process group `pid` leads.
bool process_listens_on(pid_t pid, int port);

// True when sockets listen on `port` and every one of them is held by
// process `pid` or its group. Programs that set SO_REUSEPORT (llama-server,
// through cpp-httplib) can listen on a port another one already listens on,
// and the kernel then splits connections between them; a backend that shares
// its port must not be trusted (two routers' backends can collide).
bool process_alone_listens_on(pid_t pid, int port);

}  // namespace lemon
