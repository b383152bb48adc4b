#include "support/running_server.h"

#include <gtest/gtest.h>

namespace lemon::testing {

RunningServer::RunningServer(net::ServerOptions options, net::Handler handler, int port)
    : server_(std::move(options), std::move(handler)) {
  auto bound = server_.bind("127.0.0.1", port);
  EXPECT_TRUE(bound.ok()) << (bound.ok() ? "" : bound.error().message());
  port_ = bound.ok() ? *bound : 0;
  thread_ = std::thread([this] { server_.run(); });
}

void RunningServer::stop() {
  server_.stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

}  // namespace lemon::testing
