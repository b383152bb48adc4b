// RunningServer: an net::Server bound to 127.0.0.1 (on a port the kernel
// picks, or a given one) and serving on its own thread until stop() or the
// destructor. A failed bind fails the test and leaves port() at 0.
#pragma once

#include <thread>
#include <utility>

#include "lemon/net/server.h"

namespace lemon::testing {

class RunningServer {
 public:
  RunningServer(net::ServerOptions options, net::Handler handler, int port = 0);
  explicit RunningServer(net::Handler handler, int port = 0)
      : RunningServer(net::ServerOptions{}, std::move(handler), port) {}
  ~RunningServer() { stop(); }
  RunningServer(const RunningServer&) = delete;
  RunningServer& operator=(const RunningServer&) = delete;

  int port() const { return port_; }
  net::Server& server() { return server_; }
  // Stops the server and joins its thread; idempotent.
  void stop();

 private:
  net::Server server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace lemon::testing
