// UpstreamClient against our own Server as the backend (and a
// scripted raw socket backend where exact wire behaviour matters).
#include "lemon/net/upstream_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lemon/net/server.h"
#include "support/gate.h"
#include "support/loopback_connect.h"
#include "support/loopback_listener.h"
#include "support/running_server.h"

namespace lemon::net {
namespace {

using testing::connect_loopback;
using testing::Gate;
using testing::LoopbackListener;
using testing::RunningServer;

using namespace std::chrono_literals;

constexpr int kUpstreamIoTimeoutMs = 10000;  // guard against hangs, never a sync mechanism

// The client's port as seen by the server, identifying the connection.
int peer_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

// A listening socket on 127.0.0.1:<ephemeral> whose connections a test
// script handles byte by byte on its own thread.
class RawBackend {
 public:
  explicit RawBackend(std::function<void(RawBackend&)> script) {
    EXPECT_TRUE(listener_.is_open());
    thread_ = std::thread([this, script = std::move(script)] { script(*this); });
  }
  ~RawBackend() { thread_.join(); }
  int port() const { return listener_.port(); }

  int accept_one() {
    pollfd p{listener_.fd(), POLLIN, 0};
    if (::poll(&p, 1, kUpstreamIoTimeoutMs) <= 0) {
      return -1;
    }
    return ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
  }
  // Reads one request head (and nothing after it).
  static std::string read_head(int fd) {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, kUpstreamIoTimeoutMs) <= 0 || ::recv(fd, &c, 1, 0) != 1) {
        break;
      }
      head.push_back(c);
    }
    return head;
  }
  static void write(int fd, std::string_view data) {
    ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
  }

 private:
  LoopbackListener listener_;
  std::thread thread_;
};

UpstreamRequest get(std::string path) {
  UpstreamRequest r;
  r.method = "GET";
  r.path = std::move(path);
  return r;
}

TEST(HttpUpstreamClient, SendReadsContentLengthResponse) {
  RunningServer backend([](Request& req, ResponseWriter& w) {
    EXPECT_EQ(req.method, "POST");
    EXPECT_EQ(req.path, "/v1/chat/completions");
    EXPECT_EQ(req.media_type(), "application/json");
    EXPECT_EQ(*req.headers.get("X-Extra"), "1");
    EXPECT_EQ(req.headers.get("Host")->substr(0, 10), "127.0.0.1:");
    EXPECT_EQ(*req.headers.get("Content-Length"), std::to_string(req.body.size()));
    w.send(201, Headers{{"Content-Type", "application/json"}, {"X-Reply", "r"}},
           "{\"echo\":" + req.body + "}");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  EXPECT_EQ(client.host(), "127.0.0.1");
  EXPECT_EQ(client.port(), backend.port());
  UpstreamRequest req;
  req.path = "/v1/chat/completions";
  req.content_type = "application/json";
  req.body = "{\"a\":1}";
  req.headers.add("X-Extra", "1");
  auto res = client.send(req, {});
  ASSERT_TRUE(res.ok()) << res.error().message();
  EXPECT_EQ(res->status, 201);
  EXPECT_EQ(res->body, "{\"echo\":{\"a\":1}}");
  EXPECT_EQ(*res->headers.get("x-reply"), "r");
}

TEST(HttpUpstreamClient, SendDecodesChunkedResponse) {
  RunningServer backend([](Request&, ResponseWriter& w) {
    w.begin_chunked(200, Headers{{"Content-Type", "text/plain"}});
    w.write_chunk("hello ");
    w.write_chunk(std::string(100000, 'x'));
    w.write_chunk(" world");
    w.finish();
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto res = client.send(get("/"), {});
  ASSERT_TRUE(res.ok()) << res.error().message();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "hello " + std::string(100000, 'x') + " world");
}

TEST(HttpUpstreamClient, StreamDeliversPiecesAsTheServerWritesThem) {
  Gate got_a;
  Gate got_b;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    w.begin_chunked(200, Headers{{"Content-Type", "text/event-stream"}});
    w.write_chunk("a");
    // The next piece is written only once the client has seen this one.
    if (!got_a.wait()) {
      return;
    }
    w.write_chunk("b");
    if (!got_b.wait()) {
      return;
    }
    w.write_chunk("c");
    w.finish();
  });
  UpstreamClient client("127.0.0.1", backend.port());
  std::vector<std::string> pieces;
  int head_status = 0;
  auto status = client.stream(
      get("/stream"), {},
      [&](const UpstreamHead& head) {
        head_status = head.status;
        EXPECT_EQ(*head.headers.get("content-type"), "text/event-stream");
        return true;
      },
      [&](std::string_view piece) {
        pieces.emplace_back(piece);
        if (piece == "a") {
          got_a.open();
        } else if (piece == "b") {
          got_b.open();
        }
        return true;
      });
  ASSERT_TRUE(status.ok()) << status.error().message();
  EXPECT_EQ(head_status, 200);
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(HttpUpstreamClient, SequentialRequestsReuseOneConnection) {
  std::mutex mu;
  std::set<int> ports;
  RunningServer backend([&](Request& req, ResponseWriter& w) {
    {
      std::lock_guard lock(mu);
      ports.insert(peer_port(w.client_fd()));
    }
    if (req.path == "/chunked") {
      w.begin_chunked(200, {});
      w.write_chunk("x");
      w.finish();
    } else {
      w.send(200, {}, "ok");
    }
  });
  UpstreamClient client("127.0.0.1", backend.port());
  for (const char* path : {"/a", "/chunked", "/b", "/chunked", "/c"}) {
    auto res = client.send(get(path), {});
    ASSERT_TRUE(res.ok()) << res.error().message();
  }
  UpstreamRequest head = get("/head");
  head.method = "HEAD";
  ASSERT_TRUE(client.send(head, {}).ok());
  ASSERT_TRUE(client.send(get("/after-head"), {}).ok());
  std::lock_guard lock(mu);
  EXPECT_EQ(ports.size(), 1u);
}

TEST(HttpUpstreamClient, ClosedPooledConnectionIsReplacedTransparently) {
  auto first = std::make_unique<RunningServer>(
      [](Request&, ResponseWriter& w) { w.send(200, {}, "first"); });
  const int port = first->port();
  UpstreamClient client("127.0.0.1", port);
  auto r1 = client.send(get("/"), {});
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->body, "first");
  first->stop();  // closes the idle keep-alive connection the client pooled
  first.reset();
  RunningServer second([](Request&, ResponseWriter& w) { w.send(200, {}, "second"); }, port);
  auto r2 = client.send(get("/"), {});
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(r2->body, "second");
}

TEST(HttpUpstreamClient, RequestOnConnectionClosedUnderneathIsRetriedOnce) {
  // The backend reads the second request on the pooled connection and closes
  // it without a byte of answer; the client must retry on a new connection.
  RawBackend backend([](RawBackend& b) {
    int c1 = b.accept_one();
    RawBackend::read_head(c1);
    RawBackend::write(c1, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    RawBackend::read_head(c1);
    ::close(c1);
    int c2 = b.accept_one();
    RawBackend::read_head(c2);
    RawBackend::write(c2, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain");
    ::close(c2);
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto r1 = client.send(get("/1"), {});
  ASSERT_TRUE(r1.ok()) << r1.error().message();
  EXPECT_EQ(r1->body, "ok");
  auto r2 = client.send(get("/2"), {});
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(r2->body, "again");
}

TEST(HttpUpstreamClient, FreshConnectionClosedBeforeAnswerIsCrashedNotRetried) {
  RawBackend backend([](RawBackend& b) {
    int c = b.accept_one();
    RawBackend::read_head(c);
    ::close(c);
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto r = client.send(get("/"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendCrashed);
  EXPECT_NE(r.error().message().find("lost"), std::string::npos) << r.error().message();
}

TEST(HttpUpstreamClient, FreshConnectionResetBeforeAnswerIsUnavailable) {
  // A reset with nothing answered is typed like a refused connect (issue
  // #14 §2), so the API layer may try again.
  RawBackend backend([](RawBackend& b) {
    int c = b.accept_one();
    RawBackend::read_head(c);
    linger abort{1, 0};  // close() now sends RST
    ::setsockopt(c, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::close(c);
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto r = client.send(get("/"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendUnavailable);
  EXPECT_NE(r.error().message().find("reset"), std::string::npos) << r.error().message();
}

TEST(HttpUpstreamClient, RefusedPortIsBackendUnavailable) {
  // A bound but not listening socket reserves a port nobody accepts on.
  auto holder = LoopbackListener::bound_only();
  ASSERT_TRUE(holder.is_open());
  const int port = holder.port();

  UpstreamClient client("127.0.0.1", port);
  auto r = client.send(get("/"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendUnavailable);
  EXPECT_EQ(r.error().message(),
            "cannot connect to backend 127.0.0.1:" + std::to_string(port) + ": Connection refused");
  auto p = client.probe("/health", 500ms);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code(), ErrorCode::kBackendUnavailable);
}

TEST(HttpUpstreamClient, ServerClosingMidChunkedBodyIsBackendCrashed) {
  // A stream cut off between well-formed chunks is what a backend that dies
  // while generating looks like: a crash (the stream's backend_unavailable
  // event), not a malformed answer; malformed chunk syntax is 502.
  RunningServer backend([](Request&, ResponseWriter& w) {
    w.begin_chunked(200, {});
    w.write_chunk("partial");
    throw std::runtime_error("backend died");  // the server closes mid-body
  });
  UpstreamClient client("127.0.0.1", backend.port());
  std::string got;
  auto status = client.stream(
      get("/"), {}, [](const UpstreamHead&) { return true; },
      [&](std::string_view piece) {
        got.append(piece);
        return true;
      });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kBackendCrashed) << status.error().message();
  EXPECT_EQ(got, "partial");
}

// A backend that answers `reply` to one request, then closes the connection.
std::function<void(RawBackend&)> answer_once(std::string reply) {
  return [reply = std::move(reply)](RawBackend& b) {
    int c = b.accept_one();
    RawBackend::read_head(c);
    RawBackend::write(c, reply);
    ::close(c);
  };
}

TEST(HttpUpstreamClient, FewerBytesThanContentLengthIsUpstreamProtocolError) {
  RawBackend backend(answer_once("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
  UpstreamClient client("127.0.0.1", backend.port());
  auto r = client.send(get("/"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUpstreamProtocol) << r.error().message();
  EXPECT_NE(r.error().message().find("7 bytes short of its Content-Length 10"), std::string::npos)
      << r.error().message();
}

TEST(HttpUpstreamClient, AResetBeforeTheContentLengthIsUpstreamProtocolError) {
  Gate head_read;
  RawBackend backend([&](RawBackend& b) {
    int c = b.accept_one();
    RawBackend::read_head(c);
    RawBackend::write(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    // Reset only once the client has the head: a reset before it is
    // "nothing answered" (kBackendUnavailable, retried by the API layer).
    head_read.wait();
    linger abort{1, 0};  // close() now sends RST
    ::setsockopt(c, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::close(c);
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto status = client.stream(
      get("/"), {},
      [&](const UpstreamHead&) {
        head_read.open();
        return true;
      },
      [](std::string_view) { return true; });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kUpstreamProtocol) << status.error().message();
}

TEST(HttpUpstreamClient, MoreBytesThanContentLengthIsUpstreamProtocolError) {
  RawBackend backend(answer_once("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"));
  UpstreamClient client("127.0.0.1", backend.port());
  auto r = client.send(get("/"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUpstreamProtocol) << r.error().message();
  EXPECT_NE(r.error().message().find("more bytes than its Content-Length 2"), std::string::npos)
      << r.error().message();
}

TEST(HttpUpstreamClient, AnExactContentLengthBodyFromAClosingBackendIsFine) {
  RawBackend backend(answer_once("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
  UpstreamClient client("127.0.0.1", backend.port());
  auto r = client.send(get("/"), {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->body, "ok");
}

// A connected TCP pair standing in for the downstream client connection.
struct TcpPair {
  int server_side = -1;  // what the router would watch
  int client_side = -1;  // what the downstream client would close
};

TcpPair make_tcp_pair() {
  TcpPair pair;
  LoopbackListener listener;
  pair.client_side = connect_loopback(listener.port());
  pair.server_side = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
  return pair;
}

class WatchFdCancellation : public ::testing::TestWithParam<bool> {};

TEST_P(WatchFdCancellation, ClientHangUpCancelsAndTheBackendSeesItsClientLeave) {
  const bool use_tcp = GetParam();
  Gate entered;
  std::promise<bool> backend_saw_disconnect;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    w.begin_chunked(200, {});
    w.write_chunk("data: first\n\n");
    entered.open();
    // Blocks (like prompt processing) until the router drops the connection.
    pollfd p{w.client_fd(), POLLRDHUP, 0};
    ::poll(&p, 1, kUpstreamIoTimeoutMs);
    backend_saw_disconnect.set_value(!w.client_connected());
  });
  int watched = -1;
  int closer = -1;
  if (use_tcp) {
    auto pair = make_tcp_pair();
    watched = pair.server_side;
    closer = pair.client_side;
  } else {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    watched = sv[0];
    closer = sv[1];
  }
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.watch_fd = watched;
  std::string got;
  auto result = std::async(std::launch::async, [&] {
    return client.stream(
        get("/v1/chat/completions"), options, [](const UpstreamHead&) { return true; },
        [&](std::string_view piece) {
          got.append(piece);
          return true;
        });
  });
  ASSERT_TRUE(entered.wait());
  ::close(closer);
  // The backend would answer only after kUpstreamIoTimeoutMs: a call that returns
  // cancelled was cancelled by the hang-up (no time budget: issue #23).
  ASSERT_EQ(result.wait_for(20s), std::future_status::ready);
  Status status = result.get();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kCancelled);
  auto saw = backend_saw_disconnect.get_future();
  ASSERT_EQ(saw.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(saw.get());
  ::close(watched);
}

INSTANTIATE_TEST_SUITE_P(HttpUpstreamClient, WatchFdCancellation, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "Tcp" : "SocketPair";
                         });

TEST(HttpUpstreamClient, ClientHangUpCancelsEvenWhileTheBackendNeverPauses) {
  Gate entered;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    w.begin_chunked(200, {});
    const std::string block(64u << 10, 'x');
    bool first = true;
    while (w.write_chunk(block)) {  // floods until the router hangs up
      if (std::exchange(first, false)) {
        entered.open();
      }
    }
  });
  auto pair = make_tcp_pair();
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.watch_fd = pair.server_side;
  auto result = std::async(std::launch::async, [&] {
    return client.stream(
        get("/flood"), options, [](const UpstreamHead&) { return true; },
        [](std::string_view) { return true; });
  });
  ASSERT_TRUE(entered.wait());
  ::close(pair.client_side);
  // The backend floods until the call hangs up: returning at all is the
  // cancel (no time budget: issue #23).
  ASSERT_EQ(result.wait_for(20s), std::future_status::ready);
  Status status = result.get();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kCancelled);
  ::close(pair.server_side);
}

TEST(HttpUpstreamClient, ClientHangUpCancelsANonStreamingCallWhileTheBackendNeverPauses) {
  // send() collects the whole body, so the flood is chunks of one byte
  // behind a long chunk extension: the backend writes (1 MiB at a time)
  // faster than the client decodes, so its recv() finds data every time and
  // the hang-up is noticed only by the check between reads; the body stays
  // small.
  Gate entered;
  std::promise<bool> backend_saw_close;
  RawBackend backend([&](RawBackend& b) {
    int c = b.accept_one();
    timeval guard{kUpstreamIoTimeoutMs / 1000, 0};  // a send that blocks this long fails
    ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof guard);
    RawBackend::read_head(c);
    RawBackend::write(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = "1;x=" + std::string(4000, 'y') + "\r\nz\r\n";
    std::string block;
    while (block.size() < (1u << 20)) {
      block += chunk;
    }
    bool first = true;
    bool closed = false;
    for (;;) {
      if (::send(c, block.data(), block.size(), MSG_NOSIGNAL) < 0) {
        closed = errno == EPIPE || errno == ECONNRESET;
        break;
      }
      if (std::exchange(first, false)) {
        entered.open();
      }
    }
    backend_saw_close.set_value(closed);
    ::close(c);
  });
  auto pair = make_tcp_pair();
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.watch_fd = pair.server_side;
  auto result = std::async(std::launch::async, [&] { return client.send(get("/flood"), options); });
  ASSERT_TRUE(entered.wait());
  ::close(pair.client_side);
  // The backend floods until the call hangs up: returning at all is the
  // cancel (no time budget: issue #23).
  ASSERT_EQ(result.wait_for(20s), std::future_status::ready);
  auto reply = result.get();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code(), ErrorCode::kCancelled) << reply.error().message();
  // The upstream connection was closed: the backend's next send failed.
  auto saw = backend_saw_close.get_future();
  ASSERT_EQ(saw.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(saw.get());
  ::close(pair.server_side);
}

TEST(HttpUpstreamClient, OnTickReturningFalseCancels) {
  Gate release;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    release.wait();
    w.send(200, {}, "late");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.tick_interval = 20ms;
  int ticks = 0;
  options.on_tick = [&] { return ++ticks < 3; };
  auto r = client.send(get("/"), options);
  release.open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCancelled);
  EXPECT_EQ(ticks, 3);
}

TEST(HttpUpstreamClient, IdleTimeoutIsGatewayTimeout) {
  Gate release;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    release.wait();
    w.send(200, {}, "late");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.idle_timeout = 100ms;
  auto r = client.send(get("/"), options);
  release.open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kGatewayTimeout);
  EXPECT_NE(r.error().message().find("sent nothing for 100 ms"), std::string::npos);
}

// Issue #26: silence before the first byte is not idleness while the
// backend says it is working; the wait goes on one recheck at a time, and
// times out as usual once the backend stops saying so.
TEST(HttpUpstreamClient, ABackendThatSaysItIsWorkingIsNotIdleBeforeItsFirstByte) {
  Gate release;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    release.wait();
    w.send(200, {}, "done");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.idle_timeout = 50ms;
  options.working_recheck = 20ms;
  int asked = 0;
  options.still_working = [&] {
    if (++asked == 3) {
      release.open();  // the answer comes while the third recheck waits
    }
    return true;
  };
  auto r = client.send(get("/"), options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->body, "done");
  EXPECT_GE(asked, 3);
}

TEST(HttpUpstreamClient, ABackendThatStopsSayingItIsWorkingTimesOut) {
  Gate release;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    release.wait();
    w.send(200, {}, "late");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.idle_timeout = 50ms;
  options.working_recheck = 20ms;
  int asked = 0;
  options.still_working = [&] { return ++asked < 4; };
  auto r = client.send(get("/"), options);
  release.open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kGatewayTimeout);
  EXPECT_EQ(asked, 5) << "asked once more after the grace for an answer on its way";
}

// llama-server frees a slot before it writes the answer: a backend that
// stops saying it works and answers just after is not timed out.
TEST(HttpUpstreamClient, AnAnswerWrittenJustAfterTheWorkEndsIsTaken) {
  Gate release;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    release.wait();
    w.send(200, {}, "just in time");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.idle_timeout = 50ms;
  options.working_recheck = 20ms;
  int asked = 0;
  options.still_working = [&] {
    if (++asked < 3) {
      return true;
    }
    release.open();  // the work ends; the answer follows
    return false;
  };
  auto r = client.send(get("/"), options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->body, "just in time");
}

// Issue #24: the backend's secret goes on every call and probe, in place of
// any Authorization header a request carries.
TEST(HttpUpstreamClient, TheBearerTokenGoesOnEveryCallInPlaceOfTheRequests) {
  std::mutex mu;
  std::vector<std::string> seen;
  RunningServer backend([&](Request& req, ResponseWriter& w) {
    std::lock_guard lock(mu);
    seen.push_back(std::string(req.headers.get("Authorization").value_or("<none>")));
    w.send(200, {}, "ok");
  });
  UpstreamClient client("127.0.0.1", backend.port(), 4, "s3cret");
  UpstreamRequest req = get("/v1/models");
  req.headers.add("Authorization", "Bearer the-clients-key");
  ASSERT_TRUE(client.send(req, {}).ok());
  ASSERT_TRUE(client
                  .stream(
                      get("/stream"), {}, [](const UpstreamHead&) { return true; },
                      [](std::string_view) { return true; })
                  .ok());
  ASSERT_EQ(*client.probe("/health", 10s), 200);
  UpstreamClient anonymous("127.0.0.1", backend.port());
  ASSERT_TRUE(anonymous.send(get("/"), {}).ok());
  std::lock_guard lock(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"Bearer s3cret", "Bearer s3cret", "Bearer s3cret",
                                            "<none>"}));
}

TEST(HttpUpstreamClient, TotalTimeoutBoundsACallThatKeepsSending) {
  Gate release;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    w.begin_chunked(200, {});
    // A chunk every 20 ms: never idle, never done.
    while (!release.wait(20ms) && w.write_chunk("x")) {
    }
  });
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions options;
  options.idle_timeout = 1s;
  options.total_timeout = 200ms;
  auto r = client.send(get("/"), options);
  release.open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kGatewayTimeout);
  EXPECT_NE(r.error().message().find("did not finish in time"), std::string::npos);
}

TEST(HttpUpstreamClient, CallbackReturningFalseCancelsAndDropsTheConnection) {
  std::mutex mu;
  std::set<int> ports;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    {
      std::lock_guard lock(mu);
      ports.insert(peer_port(w.client_fd()));
    }
    w.send(200, {}, "body");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto status = client.stream(
      get("/"), {}, [](const UpstreamHead&) { return true; },
      [](std::string_view) { return false; });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kCancelled);
  auto head_cancel = client.stream(
      get("/"), {}, [](const UpstreamHead&) { return false; },
      [](std::string_view) { return true; });
  EXPECT_EQ(head_cancel.error().code(), ErrorCode::kCancelled);
  ASSERT_TRUE(client.send(get("/"), {}).ok());
  std::lock_guard lock(mu);
  EXPECT_EQ(ports.size(), 3u);  // neither cancelled connection was reused
}

TEST(HttpUpstreamClient, ProbeReturnsStatus) {
  RunningServer backend(
      [](Request& req, ResponseWriter& w) { w.send(req.path == "/health" ? 200 : 503, {}, "{}"); });
  UpstreamClient client("127.0.0.1", backend.port());
  auto ok = client.probe("/health", 10s);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(*ok, 200);
  auto busy = client.probe("/other", 1000ms);
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(*busy, 503);
}

TEST(HttpUpstreamClient, ProbeTimesOutOnASilentBackend) {
  Gate release;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    release.wait();
    w.send(200, {}, "");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto r = client.probe("/health", 100ms);
  release.open();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kGatewayTimeout);
}

TEST(HttpUpstreamClient, SkipsInterimResponsesAndReadsUntilClose) {
  RawBackend backend([](RawBackend& b) {
    int c = b.accept_one();
    RawBackend::read_head(c);
    RawBackend::write(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX: y\r\n\r\nuntil");
    RawBackend::write(c, " close");
    ::close(c);
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto r = client.send(get("/"), {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "until close");
  EXPECT_EQ(*r->headers.get("x"), "y");
}

TEST(HttpUpstreamClient, GarbageIsUpstreamProtocolError) {
  RawBackend backend([](RawBackend& b) {
    for (const char* reply :
         {"SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
      int c = b.accept_one();
      RawBackend::read_head(c);
      RawBackend::write(c, reply);
      ::close(c);
    }
  });
  UpstreamClient client("127.0.0.1", backend.port());
  for (int i = 0; i < 3; ++i) {
    auto r = client.send(get("/"), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kUpstreamProtocol) << r.error().message();
  }
}

TEST(HttpUpstreamClient, EndlessInterimResponsesAreUpstreamProtocolError) {
  RawBackend backend([](RawBackend& b) {
    int c = b.accept_one();
    RawBackend::read_head(c);
    std::string many;
    for (int i = 0; i < 5; ++i) {
      many += "HTTP/1.1 102 Processing\r\n\r\n";
    }
    RawBackend::write(c, many + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    ::close(c);
  });
  UpstreamClient client("127.0.0.1", backend.port());
  auto r = client.send(get("/"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUpstreamProtocol) << r.error().message();
}

TEST(HttpUpstreamClient, AReplyOverTheLimitIsUpstreamProtocolErrorAndNotReused) {
  std::atomic<int> served{0};
  RunningServer backend([&](Request& r, ResponseWriter& w) {
    ++served;
    w.send(200, {}, std::string(r.path == "/big" ? 3u << 20 : 10u, 'x'));
  });
  UpstreamClient client("127.0.0.1", backend.port());
  CallOptions limited;
  limited.max_response_bytes = 1u << 20;
  auto big = client.send(get("/big"), limited);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), ErrorCode::kUpstreamProtocol);
  EXPECT_NE(big.error().message().find("--max-response-size"), std::string::npos);
  // The next call works on a fresh connection; one at the limit passes.
  auto small = client.send(get("/small"), limited);
  ASSERT_TRUE(small.ok()) << small.error().message();
  EXPECT_EQ(small->body.size(), 10u);
  CallOptions exact;
  exact.max_response_bytes = 3u << 20;
  EXPECT_TRUE(client.send(get("/big"), exact).ok());
  EXPECT_EQ(served, 3);
}

TEST(HttpUpstreamClient, CloseIdleDropsPooledConnections) {
  std::mutex mu;
  std::set<int> ports;
  RunningServer backend([&](Request&, ResponseWriter& w) {
    {
      std::lock_guard lock(mu);
      ports.insert(peer_port(w.client_fd()));
    }
    w.send(204, {}, "");
  });
  UpstreamClient client("127.0.0.1", backend.port());
  ASSERT_TRUE(client.send(get("/"), {}).ok());
  client.close_idle();
  auto r = client.send(get("/"), {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 204);
  std::lock_guard lock(mu);
  EXPECT_EQ(ports.size(), 2u);
}

}  // namespace
}  // namespace lemon::net
