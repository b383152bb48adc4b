// WebSocket in the server (RFC 6455; include/lemon/net/websocket.h) against
// well-behaved and hostile clients over loopback: the upgrade, echo, the
// close handshake both ways, pings and the idle timeout, and the same
// hostile clients the HTTP server meets (slow handshakes, huge or unmasked
// frames, floods of pings, clients that do not read), plus the socket
// limits and the server's stop. Synchronisation is by frames and gates,
// never by sleeping.
#include <dirent.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lemon/net/server.h"
#include "lemon/net/websocket.h"
#include "support/gate.h"
#include "support/raw_client.h"
#include "support/running_server.h"
#include "support/websocket_client.h"

namespace lemon::net {
namespace {

using namespace std::chrono_literals;
using testing::Gate;
using testing::RawClient;
using testing::RunningServer;
using testing::WsClient;

// What the tests' handler saw, shared with the test.
struct Seen {
  std::atomic<int> opened{0};
  std::atomic<int> closed{0};
  std::atomic<int> close_code{0};
  std::atomic<int> refused_sends{0};
  std::atomic<std::size_t> most_queued{0};
  Gate closed_gate;
  Gate flooded;
};

// Echoes text; "close:<code>" closes with that code, "flood" queues 64 KiB
// messages until the queue refuses one, "deadline" sets a 50 ms deadline.
class EchoHandler final : public WebSocketHandler {
 public:
  explicit EchoHandler(std::shared_ptr<Seen> seen) : seen_(std::move(seen)) {}
  void on_open(const std::shared_ptr<WebSocket>& socket) override {
    socket_ = socket;
    ++seen_->opened;
  }
  void on_text(std::string_view text) override {
    if (text.starts_with("close:")) {
      socket_->close(static_cast<std::uint16_t>(std::stoi(std::string(text.substr(6)))), "bye");
    } else if (text == "flood") {
      const std::string big(64 << 10, 'f');
      while (socket_->send_text(big) == WebSocket::Sent::kQueued) {
        seen_->most_queued = std::max(seen_->most_queued.load(), socket_->queued_bytes());
      }
      ++seen_->refused_sends;
      seen_->most_queued = std::max(seen_->most_queued.load(), socket_->queued_bytes());
      seen_->flooded.open();
    } else if (text == "deadline") {
      socket_->set_deadline(std::chrono::steady_clock::now() + 50ms, 4000, "too late");
    } else {
      socket_->send_text(text);
    }
  }
  void on_closed(std::uint16_t code) override {
    seen_->close_code = code;
    ++seen_->closed;
    seen_->closed_gate.open();
  }

 private:
  std::shared_ptr<Seen> seen_;
  std::shared_ptr<WebSocket> socket_;
};

// A server whose every request is upgraded (after the handshake's checks).
struct SocketServer {
  explicit SocketServer(ServerOptions options = {})
      : seen(std::make_shared<Seen>()),
        server(std::move(options), [this](Request& r, ResponseWriter& w) {
          auto accept = check_websocket_handshake(r);
          if (!accept.ok()) {
            w.send(400, Headers{}, accept.error().message());
            return;
          }
          if (!w.upgrade_to_websocket(*accept, Headers{{"Sec-WebSocket-Protocol", "x"}},
                                      std::make_shared<EchoHandler>(seen), 1 << 16)) {
            w.send(503, Headers{}, "no room");
          }
        }) {}
  int port() const { return server.port(); }
  std::shared_ptr<Seen> seen;
  RunningServer server;
};

void expect_open(WsClient& c, const std::string& extra = "") {
  auto r = c.handshake("/ws", {}, extra);
  ASSERT_EQ(r.status, 101) << r.head;
  EXPECT_EQ(RawClient::header(r.head, "upgrade"), "websocket");
  EXPECT_EQ(RawClient::header(r.head, "connection"), "Upgrade");
  EXPECT_EQ(RawClient::header(r.head, "sec-websocket-accept"), WsClient::kExampleAccept);
  EXPECT_EQ(RawClient::header(r.head, "sec-websocket-protocol"), "x");
}

// The server's close frame with `code`, answered as a client does, then the
// end of the connection (at once after a protocol error, or once answered).
void expect_closed_with(WsClient& c, std::uint16_t code) {
  std::optional<WsClient::Frame> f;
  do {
    f = c.read_frame();
  } while (f && f->opcode != 0x8);
  ASSERT_TRUE(f.has_value()) << "no close frame";
  EXPECT_EQ(f->close_code(), code) << f->close_reason();
  EXPECT_FALSE(f->masked) << "server frames are never masked";
  c.send_close(code);  // may find the connection closed already
  EXPECT_TRUE(c.raw().read_to_eof()) << "the server ends the connection";
}

TEST(WebSocketServer, UpgradesAndEchoes) {
  SocketServer s;
  WsClient c(s.port());
  expect_open(c);
  ASSERT_TRUE(c.send_text("hello"));
  auto f = c.read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, 0x1);
  EXPECT_FALSE(f->masked);
  EXPECT_EQ(f->payload, "hello");
  // A fragmented message with a ping between its fragments.
  ASSERT_TRUE(c.send_frame(0x1, "frag", false));
  ASSERT_TRUE(c.send_frame(0x9, "mid"));
  ASSERT_TRUE(c.send_frame(0x0, "mented"));
  auto pong = c.read_frame();
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->opcode, 0xA);
  EXPECT_EQ(pong->payload, "mid");
  auto whole = c.read_frame();
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->payload, "fragmented");
  EXPECT_EQ(s.server.server().open_websockets(), 1);
}

TEST(WebSocketServer, FramesSentWithTheHandshakeAreRead) {
  SocketServer s;
  WsClient c(s.port());
  expect_open(c, WsClient::frame(0x1, "early"));
  auto f = c.read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->payload, "early");
}

TEST(WebSocketServer, TheClientsCloseIsAnsweredWithItsCode) {
  SocketServer s;
  WsClient c(s.port());
  expect_open(c);
  ASSERT_TRUE(c.send_close(4321, "done"));
  expect_closed_with(c, 4321);
  ASSERT_TRUE(s.seen->closed_gate.wait());
  EXPECT_EQ(s.seen->close_code.load(), 4321);
  EXPECT_EQ(s.seen->closed.load(), 1);
}

TEST(WebSocketServer, AServerCloseWaitsForTheClientsAnswer) {
  SocketServer s;
  WsClient c(s.port());
  expect_open(c);
  ASSERT_TRUE(c.send_text("close:1000"));
  auto f = c.read_frame();
  ASSERT_TRUE(f.has_value());
  ASSERT_EQ(f->opcode, 0x8);
  EXPECT_EQ(f->close_code(), 1000);
  EXPECT_EQ(f->close_reason(), "bye");
  // Still open until the client answers; messages are no longer handled.
  ASSERT_TRUE(c.send_text("ignored"));
  ASSERT_TRUE(c.send_close(1000));
  EXPECT_TRUE(c.raw().read_to_eof());
  ASSERT_TRUE(s.seen->closed_gate.wait());
  EXPECT_EQ(s.seen->close_code.load(), 1000);
}

TEST(WebSocketServer, ProtocolErrorsGetTheirCloseCodes) {
  SocketServer s;
  struct Case {
    std::string bytes;
    std::uint16_t code;
    const char* what;
  };
  std::string huge = "\x82\xFF";
  huge += std::string("\x00\x00\x00\x10\x00\x00\x00\x00", 8);  // 64 GiB announced
  const std::vector<Case> cases = {
      {WsClient::frame(0x1, "unmasked", true, false), 1002, "an unmasked frame"},
      {huge, 1009, "a 64 GiB frame"},
      {WsClient::frame(0x1, "x", false) + WsClient::frame(0x0, std::string(70000, 'x')), 1009,
       "a message over the limit in fragments"},
      {WsClient::frame(0x1, "bad \xC3\x28 text"), 1007, "text that is not UTF-8"},
      {WsClient::frame(0x9, std::string(126, 'p')), 1002, "a ping over 125 bytes"},
      {WsClient::frame(0x9, "p", false), 1002, "a fragmented ping"},
      {WsClient::frame(0x0, "orphan"), 1002, "a continuation of nothing"},
      {WsClient::frame(0x3, "x"), 1002, "a reserved opcode"},
      {WsClient::frame(0x8, "\x03"), 1002, "a one-byte close body"},
      {WsClient::frame(0x8, std::string("\x03\xED", 2)), 1002, "close code 1005"},
      {WsClient::frame(0x2, "binary"), 1003, "binary to a text-only handler"},
  };
  for (const auto& each : cases) {
    WsClient c(s.port());
    expect_open(c);
    ASSERT_TRUE(c.send_raw(each.bytes)) << each.what;
    SCOPED_TRACE(each.what);
    expect_closed_with(c, each.code);
  }
}

TEST(WebSocketServer, PingsAreAnsweredAndAFloodIsCut) {
  ServerOptions options;
  options.websocket.max_pings_per_second = 20;
  SocketServer s(options);
  WsClient c(s.port());
  expect_open(c);
  ASSERT_TRUE(c.send_frame(0x9, "one"));
  auto pong = c.read_frame();
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->opcode, 0xA);
  EXPECT_EQ(pong->payload, "one");
  // Hundreds of pings at once: at most one pong is ever queued, and the
  // socket is closed for the flood.
  std::string flood;
  for (int i = 0; i < 500; ++i) {
    flood += WsClient::frame(0x9, "ping " + std::to_string(i));
  }
  ASSERT_TRUE(c.send_raw(flood));
  int pongs = 0;
  std::optional<WsClient::Frame> f;
  while ((f = c.read_frame()) && f->opcode == 0xA) {
    ++pongs;
  }
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, 0x8);
  EXPECT_EQ(f->close_code(), 1008);
  EXPECT_LE(pongs, 21);
}

TEST(WebSocketServer, AnIdleClientIsPingedAndOneThatDoesNotAnswerIsDropped) {
  ServerOptions options;
  options.websocket.ping_interval = 100ms;
  options.websocket.pong_timeout = 200ms;
  SocketServer s(options);
  {
    WsClient c(s.port());
    expect_open(c);
    // Answering three pings keeps it open.
    for (int i = 0; i < 3; ++i) {
      auto ping = c.read_frame();
      ASSERT_TRUE(ping.has_value());
      ASSERT_EQ(ping->opcode, 0x9);
      ASSERT_TRUE(c.send_frame(0xA, ping->payload));
    }
    ASSERT_TRUE(c.send_text("still here"));
    std::optional<WsClient::Frame> f;
    while ((f = c.read_frame()) && f->opcode == 0x9) {
      c.send_frame(0xA, f->payload);
    }
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->payload, "still here");
  }
  WsClient silent(s.port());
  expect_open(silent);
  auto ping = silent.read_frame();
  ASSERT_TRUE(ping.has_value());
  EXPECT_EQ(ping->opcode, 0x9);
  expect_closed_with(silent, 1001);
}

TEST(WebSocketServer, AHandlersDeadlineClosesTheSocket) {
  SocketServer s;
  WsClient c(s.port());
  expect_open(c);
  ASSERT_TRUE(c.send_text("deadline"));
  auto f = c.read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, 0x8);
  EXPECT_EQ(f->close_code(), 4000);
  EXPECT_EQ(f->close_reason(), "too late");
}

TEST(WebSocketServer, AClientThatDoesNotReadCannotGrowTheQueue) {
  ServerOptions options;
  options.websocket.max_queued_bytes = 1 << 20;
  SocketServer s(options);
  WsClient c(s.port());
  expect_open(c);
  ASSERT_TRUE(c.send_text("flood"));
  // The handler queued 64 KiB messages until one was refused; the queue
  // never held more than its bound.
  ASSERT_TRUE(s.seen->flooded.wait());
  EXPECT_EQ(s.seen->refused_sends.load(), 1);
  EXPECT_LE(s.seen->most_queued.load(), std::size_t{1} << 20);
  EXPECT_GT(s.seen->most_queued.load(), std::size_t{512} << 10);
}

TEST(WebSocketServer, ASlowHandshakeTimesOutAsAnySlowHead) {
  ServerOptions options;
  options.header_timeout = 200ms;
  SocketServer s(options);
  RawClient c(s.port());
  c.send("GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n");
  auto r = c.read_response();
  EXPECT_EQ(r.status, 408) << r.head;
  EXPECT_EQ(s.seen->opened.load(), 0);
}

TEST(WebSocketServer, SocketsAreLimitedInAllAndPerClient) {
  ServerOptions options;
  options.websocket.max_sockets = 2;
  SocketServer s(options);
  WsClient a(s.port());
  expect_open(a);
  WsClient b(s.port());
  expect_open(b);
  WsClient c(s.port());
  auto refused = c.handshake("/ws");
  EXPECT_EQ(refused.status, 503) << refused.head;
  // A place comes back when a socket ends.
  ASSERT_TRUE(a.send_close(1000));
  expect_closed_with(a, 1000);
  ASSERT_TRUE(s.seen->closed_gate.wait());  // its place was given back before
  WsClient d(s.port());
  expect_open(d);
  EXPECT_EQ(s.server.server().open_websockets(), 2);
}

int thread_count() {
  int n = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (::readdir(dir) != nullptr) {
      ++n;
    }
    ::closedir(dir);
  }
  return n - 2;  // . and ..
}

TEST(WebSocketServer, OpenSocketsHoldNoThread) {
  SocketServer s;
  std::vector<std::unique_ptr<WsClient>> clients;
  clients.push_back(std::make_unique<WsClient>(s.port()));
  expect_open(*clients.back());
  const int before = thread_count();
  for (int i = 0; i < 60; ++i) {
    clients.push_back(std::make_unique<WsClient>(s.port()));
    expect_open(*clients.back());
  }
  for (auto& c : clients) {
    ASSERT_TRUE(c->send_text("x"));
  }
  for (auto& c : clients) {
    auto f = c->read_frame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->payload, "x");
  }
  EXPECT_EQ(s.server.server().open_websockets(), 61);
  EXPECT_LT(thread_count() - before, 10) << "61 open sockets, a handful of threads";
}

TEST(WebSocketServer, StoppingSendsGoingAway) {
  SocketServer s;
  WsClient c(s.port());
  expect_open(c);
  std::thread stopper([&] { s.server.stop(); });
  auto f = c.read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, 0x8);
  EXPECT_EQ(f->close_code(), 1001);
  c.send_close(1001);
  stopper.join();
  EXPECT_TRUE(c.raw().read_to_eof());
  EXPECT_EQ(s.seen->closed.load(), 1);
}

}  // namespace
}  // namespace lemon::net
