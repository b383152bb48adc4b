#include "httplib_proxy.h"

#include <httplib.h>

#include <thread>

namespace bench {

struct HttplibProxy::Impl {
  httplib::Server server;
  std::thread thread;
};

HttplibProxy::HttplibProxy() : impl_(std::make_unique<Impl>()) {}

HttplibProxy::~HttplibProxy() {
  stop();
}

int HttplibProxy::start(int backend_port, int threads) {
  impl_->server.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<std::size_t>(threads));
  };
  impl_->server.set_tcp_nodelay(true);
  impl_->server.Post(".*", [backend_port](const httplib::Request& req, httplib::Response& res) {
    thread_local httplib::Client client("127.0.0.1", backend_port);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // else Nagle and delayed ACKs add ~40 ms
    auto upstream = client.Post(req.path, req.body, req.get_header_value("Content-Type"));
    if (!upstream) {
      res.status = 502;
      return;
    }
    res.status = upstream->status;
    res.set_content(upstream->body, upstream->get_header_value("Content-Type"));
  });
  const int port = impl_->server.bind_to_any_port("127.0.0.1");
  if (port <= 0) {
    return 0;
  }
  // The socket already listens (bind_to_any_port): connections made before
  // the accept loop starts wait in the backlog.
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() is a no-op until the loop runs (0.11.4 has no wait_until_ready).
  while (!impl_->server.is_running()) {
    std::this_thread::yield();
  }
  return port;
}

void HttplibProxy::stop() {
  if (impl_->thread.joinable()) {
    impl_->server.stop();
    impl_->thread.join();
  }
}

}  // namespace bench
