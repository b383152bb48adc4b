// The log stream over WebSocket (log_socket.h) with a fake socket: Lemonade's
// entry shape, logs.subscribe's snapshot and after_seq, live entries woken by
// the ring, the router's own shape on request, and a reader too slow to keep.
#include "lemon/api/lemonade/log_socket.h"

#include <gtest/gtest.h>

#include <string>

#include "support/fake_json_socket.h"

namespace lemon::api {
namespace {

using lemon::testing::FakeJsonSocket;
using nlohmann::json;

telemetry::LogLine log_line(std::string level, std::string source, std::string text,
                            std::string model = "") {
  telemetry::LogLine l;
  l.time_ms = 1743344521123;  // 2025-03-30 14:22:01.123 UTC
  l.level = std::move(level);
  l.source = std::move(source);
  l.text = std::move(text);
  l.model = std::move(model);
  return l;
}

struct Subscriber {
  explicit Subscriber(telemetry::LogRing& ring) {
    auto made = log_socket_route(ring).open(net::Request{}, http::SocketCaller{});
    EXPECT_TRUE(made.ok());
    handler = *made;
    handler->on_open(socket);
  }
  void subscribe(const json& message) { handler->on_message("logs.subscribe", message); }
  std::shared_ptr<FakeJsonSocket> socket = std::make_shared<FakeJsonSocket>();
  std::shared_ptr<http::JsonSocketHandler> handler;
};

TEST(LogSocket, EntriesHaveLemonadesShape) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const json e = lemonade_log_entry(7, log_line("warning", "router", "low memory\n"));
  EXPECT_EQ(e["seq"], 7);
  EXPECT_EQ(e["timestamp"], "2025-03-30 14:22:01.123");
  EXPECT_EQ(e["severity"], "Warn");
  EXPECT_EQ(e["tag"], "router");
  EXPECT_EQ(e["line"], "2025-03-30 14:22:01.123 [Warn] (router) low memory");
  const json backend = lemonade_log_entry(8, log_line("output", "backend", "loaded", "user.w"));
  EXPECT_EQ(backend["severity"], "Info");
  EXPECT_EQ(backend["tag"], "user.w");
  for (auto [level, severity] : {std::pair{"trace", "Trace"},
                                 {"debug", "Debug"},
                                 {"info", "Info"},
                                 {"error", "Error"},
                                 {"critical", "Fatal"}}) {
    EXPECT_EQ(lemonade_log_entry(1, log_line(level, "x", "y"))["severity"], severity) << level;
  }
}

TEST(LogSocket, SubscribeSendsTheSnapshotThenEachNewLine) {
  telemetry::LogRing ring;
  for (int i = 1; i <= 3; ++i) {
    ring.add(log_line("info", "router", "line " + std::to_string(i)));
  }
  Subscriber s(ring);
  EXPECT_TRUE(s.socket->events().empty()) << "nothing before logs.subscribe";
  s.subscribe({{"type", "logs.subscribe"}, {"after_seq", 1}});
  auto events = s.socket->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "logs.snapshot");
  ASSERT_EQ(events[0]["entries"].size(), 2u);
  EXPECT_EQ(events[0]["entries"][0]["seq"], 2);
  EXPECT_EQ(events[0]["entries"][1]["seq"], 3);

  const int wakes = s.socket->wakes();
  ring.add(log_line("error", "http", "boom"));
  EXPECT_EQ(s.socket->wakes(), wakes + 1) << "the ring wakes the socket's thread";
  s.handler->on_wake();
  events = s.socket->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["type"], "logs.entry");
  EXPECT_EQ(events[1]["entry"]["seq"], 4);
  EXPECT_EQ(events[1]["entry"]["severity"], "Error");

  s.handler->on_closed();
  ring.add(log_line("info", "router", "after the end"));
  EXPECT_EQ(s.socket->wakes(), wakes + 1) << "a closed socket is not woken";
}

TEST(LogSocket, AWholeBacklogIsAtMost5000Lines) {
  telemetry::LogRing ring;
  for (int i = 1; i <= 6000; ++i) {
    ring.add(log_line("info", "router", "line"));
  }
  Subscriber s(ring);
  s.subscribe({{"type", "logs.subscribe"}, {"after_seq", nullptr}});
  auto snapshot = s.socket->events().at(0);
  ASSERT_EQ(snapshot["entries"].size(), kSnapshotEntries);
  EXPECT_EQ(snapshot["entries"].back()["seq"], 6000);
  EXPECT_EQ(snapshot["entries"].front()["seq"], 1001);
  Subscriber after(ring);
  after.subscribe({{"type", "logs.subscribe"}, {"after_seq", 10}});
  EXPECT_EQ(after.socket->events().at(0)["entries"].size(), kSnapshotEntries)
      << "the newest 5000 after it";
}

TEST(LogSocket, TheRoutersShapeOnRequest) {
  telemetry::LogRing ring;
  ring.add(log_line("info", "backend", "hello", "user.a"));
  Subscriber s(ring);
  s.subscribe({{"type", "logs.subscribe"}, {"format", "router"}});
  const json entry = s.socket->events().at(0)["entries"].at(0);
  EXPECT_EQ(entry["text"], "hello");
  EXPECT_EQ(entry["model"], "user.a");
  EXPECT_EQ(entry["level"], "info");
}

TEST(LogSocket, BadSubscriptionsGetErrors) {
  telemetry::LogRing ring;
  Subscriber s(ring);
  s.handler->on_message("logs.start", json{{"type", "logs.start"}});
  s.subscribe({{"type", "logs.subscribe"}, {"after_seq", -1}});
  s.subscribe({{"type", "logs.subscribe"}, {"after_seq", "3"}});
  s.subscribe({{"type", "logs.subscribe"}, {"format", "xml"}});
  const auto events = s.socket->events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0]["error"]["message"], "Expected logs.subscribe message");
  for (const auto& e : events) {
    EXPECT_EQ(e["type"], "error");
  }
}

TEST(LogSocket, AReaderTooSlowIsClosed) {
  telemetry::LogRing ring;
  Subscriber s(ring);
  s.subscribe({{"type", "logs.subscribe"}});
  s.socket->refuse_sends(true);  // its queue is full
  ring.add(log_line("info", "router", "more"));
  s.handler->on_wake();
  EXPECT_TRUE(s.socket->closed());
  EXPECT_EQ(s.socket->close_code(), 1008);
  const int wakes = s.socket->wakes();
  ring.add(log_line("info", "router", "and more"));
  EXPECT_EQ(s.socket->wakes(), wakes) << "no longer followed";
}

}  // namespace
}  // namespace lemon::api
