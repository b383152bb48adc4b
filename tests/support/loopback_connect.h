// connect_loopback: a TCP connection to 127.0.0.1:port with TCP_NODELAY set,
// so every write goes out at once. Returns the socket, which the caller owns
// and closes, or -1 with errno set if the connection failed.
#pragma once

namespace lemon::testing {

int connect_loopback(int port);

}  // namespace lemon::testing
