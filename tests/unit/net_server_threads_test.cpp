// Server threading behaviour: streaming, client disconnect detection,
// stop(), concurrency beyond the spare threads, and the connection limit.
// Synchronisation is by gates and counters, never by sleeping.
#include "lemon/net/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/gate.h"
#include "support/raw_client.h"
#include "support/running_server.h"

namespace lemon::net {
namespace {

using testing::Gate;
using testing::RawClient;
using testing::RunningServer;

using namespace std::chrono_literals;

constexpr int kIoTimeoutMs = 10000;  // guard against hangs, never a sync mechanism

class Counter {
 public:
  void arrive() {
    std::lock_guard lock(mu_);
    ++count_;
    cv_.notify_all();
  }
  bool wait_for(int n, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return count_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

TEST(HttpServerThreads, ChunksReachTheClientOneByOne) {
  Gate first_seen;
  Gate second_seen;
  RunningServer s({}, [&](Request& r, ResponseWriter& w) {
    if (r.path != "/stream") {
      w.send(200, {}, "ok");  // the keep-alive follow-up request
      return;
    }
    ASSERT_TRUE(w.begin_chunked(200, Headers{{"Content-Type", "text/event-stream"}}));
    EXPECT_TRUE(w.headers_sent());
    EXPECT_TRUE(w.write_chunk("data: 1\n\n"));
    EXPECT_TRUE(w.write_chunk(""));  // no-op, writes nothing
    ASSERT_TRUE(first_seen.wait());
    EXPECT_TRUE(w.write_chunk("data: 2\n\n"));
    ASSERT_TRUE(second_seen.wait());
    EXPECT_TRUE(w.finish());
  });
  RawClient c(s.port());
  c.send("POST /stream HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string head = c.read_until("\r\n\r\n");
  EXPECT_NE(head.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_NE(head.find("Content-Type: text/event-stream\r\n"), std::string::npos);
  EXPECT_EQ(c.read_until("data: 1\n\n\r\n"), "9\r\ndata: 1\n\n\r\n");
  EXPECT_TRUE(c.buffered().empty());  // nothing else was written yet
  first_seen.open();
  EXPECT_EQ(c.read_until("data: 2\n\n\r\n"), "9\r\ndata: 2\n\n\r\n");
  second_seen.open();
  EXPECT_EQ(c.read_until("0\r\n\r\n"), "0\r\n\r\n");
  // Keep-alive still works after a chunked response.
  c.send("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_NE(c.read_until("ok").find("HTTP/1.1 200"), std::string::npos);
}

TEST(HttpServerThreads, Http10StreamingHasNoChunkFramingAndCloses) {
  RunningServer s({}, [](Request&, ResponseWriter& w) {
    w.begin_chunked(200, {});
    w.write_chunk("abc");
    w.write_chunk("def");
    w.finish();
  });
  RawClient c(s.port());
  c.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  std::string all;
  EXPECT_TRUE(c.read_to_eof(&all));
  auto body_at = all.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  EXPECT_EQ(all.substr(body_at + 4), "abcdef");
  EXPECT_EQ(all.find("Transfer-Encoding"), std::string::npos);
  EXPECT_NE(all.find("Connection: close"), std::string::npos);
}

TEST(HttpServerThreads, ClientConnectedTurnsFalseAfterClientCloses) {
  Gate entered;
  Gate client_closed;
  std::promise<std::pair<bool, bool>> seen;  // before, after
  RunningServer s({}, [&](Request&, ResponseWriter& w) {
    bool before = w.client_connected();
    entered.open();
    client_closed.wait();
    // Wait for the hang-up to be visible on the socket (event-driven).
    pollfd p{w.client_fd(), POLLRDHUP, 0};
    ::poll(&p, 1, kIoTimeoutMs);
    // A FIN alone may be a half-close: the first check probes with an interim
    // 100 Continue, which the closed socket answers with a reset.
    bool after = w.client_connected();
    if (after) {
      pollfd reset{w.client_fd(), 0, 0};  // POLLHUP/POLLERR are always reported
      ::poll(&reset, 1, kIoTimeoutMs);
      after = w.client_connected();
    }
    seen.set_value({before, after});
    w.send(200, {}, "late");
  });
  auto result = seen.get_future();
  {
    RawClient c(s.port());
    c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(entered.wait());
  }
  client_closed.open();
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready);
  auto [before, after] = result.get();
  EXPECT_TRUE(before);
  EXPECT_FALSE(after);
}

TEST(HttpServerThreads, ClientConnectedStaysTrueWithPipelinedData) {
  Gate entered;
  Gate second_sent;
  std::promise<bool> seen;
  RunningServer s({}, [&](Request& req, ResponseWriter& w) {
    if (req.path == "/first") {
      entered.open();
      second_sent.wait();
      // The second request is waiting, unread, on the socket.
      pollfd p{w.client_fd(), POLLIN, 0};
      ::poll(&p, 1, kIoTimeoutMs);
      seen.set_value(w.client_connected());
    }
    w.send(200, {}, req.path);
  });
  auto result = seen.get_future();
  RawClient c(s.port());
  c.send("GET /first HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(entered.wait());
  c.send("GET /second HTTP/1.1\r\nHost: t\r\n\r\n");
  second_sent.open();
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(result.get());
  auto first = c.read_response();
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, "/first");
  auto second = c.read_response();
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.body, "/second");
}

TEST(HttpServerThreads, StopReturnsWithIdleKeepAliveConnections) {
  auto s = std::make_unique<RunningServer>(
      ServerOptions{}, [](Request&, ResponseWriter& w) { w.send(200, {}, "ok"); });
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<RawClient>(s->port()));
    clients.back()->send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_EQ(clients.back()->read_response().status, 200);
  }
  EXPECT_EQ(s->server().open_connections(), 3);
  s->stop();  // keep_alive_timeout is 60 s: only stop() can end these

  EXPECT_EQ(s->server().open_connections(), 0);
  for (auto& c : clients) {
    EXPECT_TRUE(c->read_to_eof());
  }
}

// Threads of this process (each test runs in a process of its own).
int process_threads() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

TEST(HttpServerThreads, IdleKeepAliveConnectionsHoldNoThread) {
  // Issue #27 §3: an idle keep-alive connection waits in the workers' epoll
  // set, not in a thread of its own. One thread per connection would add
  // kConnections threads here.
  constexpr int kConnections = 64;
  ServerOptions options;
  options.spare_threads = 1;
  options.park_after = 0ms;  // parked as soon as each response is out
  RunningServer s(options, [](Request& r, ResponseWriter& w) { w.send(200, {}, r.path); });
  const int before = process_threads();
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(std::make_unique<RawClient>(s.port()));
    clients.back()->send("GET /first HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_EQ(clients.back()->read_response().body, "/first");
  }
  EXPECT_EQ(s.server().open_connections(), kConnections);
  // A few threads may be started while another is still parking its
  // connection; never one per connection.
  EXPECT_LT(process_threads() - before, kConnections / 4);
  // Every parked connection is served again, in any order, each once.
  for (auto it = clients.rbegin(); it != clients.rend(); ++it) {
    (*it)->send("GET /again HTTP/1.1\r\nHost: t\r\n\r\n");
  }
  for (auto& c : clients) {
    EXPECT_EQ(c->read_response().body, "/again");
  }
  EXPECT_EQ(s.server().open_connections(), kConnections);
}

TEST(HttpServerThreads, IdleConnectionsReachTheirKeepAliveDeadlinesInTurn) {
  // The deadline is counted from each connection's last response: a
  // connection used again is not closed at the older one's deadline.
  ServerOptions options;
  options.keep_alive_timeout = 1s;
  RunningServer s(options, [](Request&, ResponseWriter& w) { w.send(200, {}, "ok"); });
  RawClient old_one(s.port());
  old_one.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_EQ(old_one.read_response().status, 200);
  RawClient busy_one(s.port());
  const auto until = std::chrono::steady_clock::now() + 2200ms;
  int answered = 0;
  while (std::chrono::steady_clock::now() < until) {
    busy_one.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_EQ(busy_one.read_response().status, 200);
    ++answered;
  }
  // The old one went quiet 2.2 s ago, past its 1 s: closed without a word.
  std::string rest;
  EXPECT_TRUE(old_one.read_to_eof(&rest));
  EXPECT_EQ(rest, "");
  // The busy one was never idle that long.
  busy_one.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(busy_one.read_response().status, 200);
  EXPECT_GT(answered, 1);
}

TEST(HttpServerThreads, StopEndsParkedConnectionsAndLetsAServedOneFinish) {
  ServerOptions options;
  options.park_after = 0ms;  // idle connections wait in the epoll set
  Gate entered;
  Gate release;
  auto s = std::make_unique<RunningServer>(options, [&](Request& r, ResponseWriter& w) {
    if (r.path == "/slow") {
      entered.open();
      release.wait();
    }
    w.send(200, {}, r.path);
  });
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<RawClient>(s->port()));
    idle.back()->send("GET /idle HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_EQ(idle.back()->read_response().body, "/idle");
  }
  RawClient busy(s->port());
  busy.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(entered.wait());
  s->server().stop();
  for (auto& c : idle) {
    std::string rest;
    EXPECT_TRUE(c->read_to_eof(&rest));  // closed while the slow one still runs
    EXPECT_EQ(rest, "");
  }
  EXPECT_EQ(s->server().open_connections(), 1);
  release.open();
  std::string all;
  ASSERT_TRUE(busy.read_to_eof(&all));
  EXPECT_NE(all.find("Connection: close"), std::string::npos);
  EXPECT_NE(all.find("/slow"), std::string::npos);
  s->stop();
  EXPECT_EQ(s->server().open_connections(), 0);
}

TEST(HttpServerThreads, StopLetsInFlightHandlersFinish) {
  Gate entered;
  Gate release;
  RunningServer s({}, [&](Request&, ResponseWriter& w) {
    entered.open();
    release.wait();
    w.send(200, {}, "finished");
  });
  RawClient c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(entered.wait());
  s.server().stop();
  release.open();
  std::string body;
  std::string all;
  ASSERT_TRUE(c.read_to_eof(&all));
  EXPECT_NE(all.find("Connection: close"), std::string::npos);
  EXPECT_NE(all.find("finished"), std::string::npos);
  s.stop();
}

TEST(HttpServerThreads, ManyMoreSlowRequestsThanSpareThreadsRunConcurrently) {
  constexpr int kRequests = 50;
  ServerOptions options;
  options.spare_threads = 2;
  Counter arrived;
  RunningServer s(options, [&](Request&, ResponseWriter& w) {
    arrived.arrive();
    // Every handler blocks until all of them are in: only possible if each
    // connection got its own thread.
    bool all_in = arrived.wait_for(kRequests, 20s);
    w.send(all_in ? 200 : 500, {}, "");
  });
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.push_back(std::make_unique<RawClient>(s.port()));
    ASSERT_TRUE(clients.back()->connected());
    clients.back()->send("POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
  }
  for (auto& c : clients) {
    EXPECT_EQ(c->read_response().status, 200);
  }
}

TEST(HttpServerThreads, BeyondMaxConnectionsGets503) {
  ServerOptions options;
  options.max_connections = 2;
  Counter arrived;
  Gate release;
  RunningServer s(options, [&](Request&, ResponseWriter& w) {
    arrived.arrive();
    release.wait();
    w.send(200, {}, "ok");
  });
  RawClient a(s.port());
  RawClient b(s.port());
  a.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  b.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(arrived.wait_for(2));
  EXPECT_EQ(s.server().open_connections(), 2);

  RawClient c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string all;
  c.read_to_eof(&all);  // the reset after the close may replace the EOF
  EXPECT_EQ(all.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << all;
  EXPECT_NE(all.find("\"code\":\"server_busy\""), std::string::npos);
  EXPECT_NE(all.find("\"type\":\"server_error\""), std::string::npos);
  EXPECT_NE(all.find("Connection: close"), std::string::npos);

  release.open();
  EXPECT_EQ(a.read_response().status, 200);
  EXPECT_EQ(b.read_response().status, 200);
}

TEST(HttpServerThreads, ConnectionsAreServedAgainAfterTheLimitClears) {
  ServerOptions options;
  options.max_connections = 1;
  RunningServer s(options, [](Request&, ResponseWriter& w) { w.send(200, {}, "ok"); });
  for (int i = 0; i < 5; ++i) {
    RawClient c(s.port());
    c.send("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    std::string all;
    // The server closes first, so its slot is free before this read ends.
    EXPECT_TRUE(c.read_to_eof(&all));
    EXPECT_EQ(all.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << all;
  }
}

TEST(HttpServerThreads, DestructorStopsAServerThatNeverRan) {
  Server s({}, [](Request&, ResponseWriter&) {});
  ASSERT_TRUE(s.bind("127.0.0.1", 0).ok());
  s.stop();
  s.run();  // returns at once after stop()
  EXPECT_EQ(s.open_connections(), 0);
}

TEST(HttpServerThreads, LocalhostBindsAtLeastOneFamily) {
  Server s({}, [](Request&, ResponseWriter& w) { w.send(200, {}, "ok"); });
  auto port = s.bind("localhost", 0);
  ASSERT_TRUE(port.ok()) << port.error().message();
  EXPECT_GT(*port, 0);
  std::thread t([&] { s.run(); });
  {
    RawClient c(*port);  // 127.0.0.1
    ASSERT_TRUE(c.connected());
    c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(c.read_response().status, 200);
  }
  s.stop();
  t.join();
}

}  // namespace
}  // namespace lemon::net
