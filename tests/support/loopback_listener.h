// LoopbackListener: a TCP socket listening on 127.0.0.1, on a port the kernel
// picks or a given one; bound_only() leaves it bound but not listening (a port
// nobody accepts on), ipv6() uses [::1]. is_open() is false if the port could
// not be had; close() or the destructor closes the socket.
#pragma once

namespace lemon::testing {

class LoopbackListener {
 public:
  // Listens on 127.0.0.1:port; 0 lets the kernel pick (see port()).
  explicit LoopbackListener(int port = 0) : LoopbackListener(port, /*listen=*/true, false) {}
  // Bound to 127.0.0.1:port but not listening.
  static LoopbackListener bound_only(int port = 0) { return LoopbackListener(port, false, false); }
  // Listens on [::1] on a port the kernel picks.
  static LoopbackListener ipv6() { return LoopbackListener(0, true, true); }

  ~LoopbackListener() { close(); }
  LoopbackListener(LoopbackListener&& other) noexcept;
  LoopbackListener& operator=(LoopbackListener&& other) noexcept;
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  bool is_open() const { return fd_ >= 0; }
  // The bound port (kept after close()); 0 if the socket could not be set up.
  int port() const { return port_; }
  // The socket, for accept(); -1 once closed.
  int fd() const { return fd_; }
  void close();

 private:
  LoopbackListener(int port, bool listen, bool v6);

  int fd_ = -1;
  int port_ = 0;
};

}  // namespace lemon::testing
