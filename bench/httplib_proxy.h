// A minimal pass-through proxy built on Debian's cpp-httplib, for comparing
// HTTP layers (issue #11 §1): it forwards POSTs to one backend over a
// keep-alive httplib::Client per server thread and relays status, content
// type and body. No checks, no routing, no streaming: the least a proxy on
// that library can do, so the figure is a floor for it.
//
// Thread-safety: start() and stop() from one thread.
#pragma once

#include <memory>

namespace bench {

class HttplibProxy {
 public:
  HttplibProxy();
  ~HttplibProxy();  // stop()
  HttplibProxy(const HttplibProxy&) = delete;
  HttplibProxy& operator=(const HttplibProxy&) = delete;

  // Listens on a free loopback port with `threads` worker threads and
  // forwards to 127.0.0.1:backend_port. Returns the port (0 on failure).
  int start(int backend_port, int threads);
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bench
