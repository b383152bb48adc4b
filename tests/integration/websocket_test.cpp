// WebSocket through the real router: Lemonade's log stream and
// realtime transcription on every API prefix, on the main port and the
// --websocket-port one; the key as ?api_key=, as a bearer subprotocol (never
// echoed), as a header and in-band; scopes and model lists; the Origin and
// Host rules; a log reader too slow to keep; the close handshake; and
// realtime against the fake whisper-server with generated PCM.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lemon/auth/api_keys.h"
#include "lemon/http/api_keys.h"
#include "lemon/net/base64.h"
#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/websocket_client.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

constexpr int kPcmRate = 16000;

std::string base64url(const std::string& text) {
  std::string b = net::base64_encode(text);
  for (char& c : b) {
    c = c == '+' ? '-' : c == '/' ? '_' : c;
  }
  while (!b.empty() && b.back() == '=') {
    b.pop_back();
  }
  return b;
}

// `ms` of PCM16 at 16 kHz, base64: a 440 Hz tone of `amplitude`, or silence.
std::string pcm_base64(int ms, double amplitude) {
  std::string bytes;
  const int n = kPcmRate * ms / 1000;
  for (int i = 0; i < n; ++i) {
    const auto s = static_cast<std::int16_t>(amplitude * 32767.0 *
                                             std::sin(2.0 * M_PI * 440.0 * i / kPcmRate));
    bytes += static_cast<char>(static_cast<std::uint16_t>(s) & 0xFF);
    bytes += static_cast<char>((static_cast<std::uint16_t>(s) >> 8) & 0xFF);
  }
  return net::base64_encode(bytes);
}

json socket_key_entry(const std::string& name, const std::string& key, const json& scopes,
                      const json& extra = json::object()) {
  json entry = {
      {"name", name}, {"key_sha256", auth::hex_of(auth::sha256_of_key(key))}, {"scopes", scopes}};
  entry.update(extra);
  return entry;
}

class WebSocketTest : public RouterTest {
 protected:
  // A socket opened on `port` at `target`; fails the test unless it opens.
  std::unique_ptr<WsClient> open(int port, const std::string& target,
                                 const HeaderList& headers = {}) {
    auto c = std::make_unique<WsClient>(port);
    auto r = c->handshake(target, headers);
    EXPECT_EQ(r.status, 101) << target << ": " << r.head << r.body;
    return c;
  }
  int socket_port() {
    const json h = health(port());
    EXPECT_TRUE(h["websocket_port"].is_number_integer()) << h.dump();
    return h.value("websocket_port", 0);
  }
  // Subscribes and checks the snapshot's entries have Lemonade's shape.
  static void expect_snapshot(WsClient& c) {
    ASSERT_TRUE(c.send_json({{"type", "logs.subscribe"}, {"after_seq", nullptr}}));
    auto snapshot = c.read_until_type("logs.snapshot");
    ASSERT_TRUE(snapshot.has_value());
    ASSERT_FALSE((*snapshot)["entries"].empty()) << "the router has logged since it started";
    for (const auto& e : (*snapshot)["entries"]) {
      for (const char* field : {"timestamp", "severity", "tag", "line"}) {
        EXPECT_TRUE(e[field].is_string()) << e.dump();
      }
      EXPECT_TRUE(e["seq"].is_number_unsigned()) << e.dump();
    }
  }
  void start_with_keys(const std::vector<json>& keys, const std::vector<std::string>& args = {}) {
    json config;
    config["auth"]["keys"] = keys;
    env_.write_config(config);
    start_router(args, env_.config_env());
  }
};

TEST_F(WebSocketTest, BothEndpointsOnEveryPrefixAndTheSecondPort) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const int second = socket_port();
  ASSERT_GT(second, 0);
  EXPECT_NE(second, port());
  for (int p : {port(), second}) {
    for (const std::string prefix : {"", "/api/v1", "/api/v0", "/v1", "/v0"}) {
      SCOPED_TRACE(std::to_string(p) + prefix);
      auto logs = open(p, prefix + "/logs/stream");
      ASSERT_NO_FATAL_FAILURE(expect_snapshot(*logs));
      auto realtime = open(p, prefix + "/realtime?model=user.w");
      auto created = realtime->read_json();
      ASSERT_TRUE(created.has_value());
      EXPECT_EQ((*created)["type"], "session.created");
      EXPECT_EQ((*created)["session"]["model"], "user.w");
      EXPECT_TRUE((*created)["session"]["id"].get<std::string>().starts_with("sess_"));
    }
  }
  // The second port serves upgrades only; the main one keeps its SSE stream
  // on the same path and answers a plain GET of /realtime with 426.
  EXPECT_EQ(http_get(second, "/api/v1/health").status, 426);
  WsClient not_a_socket(second);
  EXPECT_EQ(not_a_socket.handshake("/api/v1/health").status, 426)
      << "an upgrade of a route that is not a WebSocket";
  EXPECT_EQ(http_get(port(), "/realtime").status, 426);
  RawClient sse(port());
  sse.send("GET /api/v1/logs/stream?tail=1 HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port()) +
           "\r\n\r\n");
  const std::string head = sse.read_until("\r\n\r\n");
  EXPECT_TRUE(head.starts_with("HTTP/1.1 200")) << head;
  EXPECT_EQ(RawClient::header(head, "content-type"), "text/event-stream");
}

TEST_F(WebSocketTest, TheSecondPortCanBeTurnedOff) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--websocket-port", "off"}));
  EXPECT_EQ(socket_port(), port()) << "then /health names the main port, which serves WebSocket";
}

TEST_F(WebSocketTest, TheKeyInTheQueryInASubprotocolInAHeaderOrInBand) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", "sk-secret"}));
  auto by_query = open(port(), "/logs/stream?api_key=sk-secret");
  ASSERT_NO_FATAL_FAILURE(expect_snapshot(*by_query));
  auto by_header = open(port(), "/api/v1/logs/stream", {{"Authorization", "Bearer sk-secret"}});
  ASSERT_NO_FATAL_FAILURE(expect_snapshot(*by_header));

  WsClient by_protocol(port());
  auto r = by_protocol.handshake(
      "/logs/stream",
      {{"Sec-WebSocket-Protocol", "lemonade-realtime, bearer." + base64url("sk-secret")}});
  ASSERT_EQ(r.status, 101) << r.head;
  EXPECT_EQ(RawClient::header(r.head, "sec-websocket-protocol"), "lemonade-realtime")
      << "the app's protocol is echoed, never the key";
  EXPECT_EQ(r.head.find("sk-secret"), std::string::npos);
  EXPECT_EQ(r.head.find(base64url("sk-secret")), std::string::npos);
  ASSERT_NO_FATAL_FAILURE(expect_snapshot(by_protocol));

  // A wrong key is refused before the upgrade.
  WsClient wrong(port());
  EXPECT_EQ(wrong.handshake("/logs/stream?api_key=nope").status, 401);
  WsClient wrong_protocol(port());
  EXPECT_EQ(wrong_protocol
                .handshake("/logs/stream", {{"Sec-WebSocket-Protocol",
                                             "lemonade-realtime, bearer." + base64url("x")}})
                .status,
            401);
  // Offered protocols without one this router speaks: refused, as Lemonade does.
  WsClient only_bearer(port());
  EXPECT_EQ(only_bearer
                .handshake("/logs/stream",
                           {{"Sec-WebSocket-Protocol", "bearer." + base64url("sk-secret")}})
                .status,
            400);

  // No key at all: the socket opens and takes an auth message first.
  auto in_band = open(port(), "/logs/stream");
  ASSERT_TRUE(in_band->send_json({{"type", "logs.subscribe"}}));
  auto refused = in_band->read_json();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ((*refused)["type"], "error");
  EXPECT_NE((*refused)["error"]["message"].get<std::string>().find("authenticate"),
            std::string::npos);
  ASSERT_TRUE(in_band->send_json({{"type", "auth"}, {"token", "nope"}}));
  auto invalid = in_band->read_json();
  ASSERT_TRUE(invalid.has_value());
  EXPECT_EQ((*invalid)["error"]["message"], "Invalid API key");
  ASSERT_TRUE(in_band->send_json({{"type", "auth"}, {"token", "sk-secret"}}));
  auto ok = in_band->read_json();
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ((*ok)["type"], "auth.ok");
  ASSERT_NO_FATAL_FAILURE(expect_snapshot(*in_band));
}

TEST_F(WebSocketTest, AnUnauthenticatedSocketMustAuthenticateSoonAndSmall) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", "sk-secret"}));
  auto big = open(port(), "/logs/stream");
  ASSERT_TRUE(big->send_text(json{{"type", "auth"}, {"token", std::string(8000, 'k')}}.dump()));
  auto f = big->read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, 0x8);
  EXPECT_EQ(f->close_code(), 1009) << "messages before authentication are small";
  auto guesser = open(port(), "/logs/stream");
  for (int i = 0; i < 3; ++i) {
    guesser->send_json({{"type", "auth"}, {"token", "guess" + std::to_string(i)}});
  }
  EXPECT_EQ(guesser->read_until_type("never"), std::nullopt);
  ASSERT_TRUE(guesser->last_close().has_value());
  EXPECT_EQ(guesser->last_close()->close_code(), 1008) << "three wrong keys";
}

TEST_F(WebSocketTest, ScopesAndModelListsApply) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_with_keys(
      {socket_key_entry("reader", "k-read", {"read"}),
       socket_key_entry("talker", "k-talk", {"inference"}, {{"models", {"user.other"}}}),
       socket_key_entry("all", "k-all", {"inference", "read"})}));
  auto status = [this](const std::string& target, const std::string& key) {
    WsClient c(port());
    return c.handshake(target, {{"Authorization", "Bearer " + key}}).status;
  };
  EXPECT_EQ(status("/realtime?model=user.w", "k-read"), 403) << "realtime needs inference";
  EXPECT_EQ(status("/logs/stream", "k-talk"), 403) << "logs need read";
  EXPECT_EQ(status("/realtime?model=user.w", "k-talk"), 403) << "outside the key's models";
  EXPECT_EQ(status("/realtime?model=user.other", "k-talk"), 101);
  EXPECT_EQ(status("/realtime?model=user.w", "k-all"), 101);
  // A model the key may not use, named later, is refused too.
  auto c = open(port(), "/realtime", {{"Authorization", "Bearer k-talk"}});
  ASSERT_TRUE(c->read_until_type("session.created").has_value());
  c->send_json({{"type", "session.update"}, {"session", {{"model", "user.w"}}}});
  auto refused = c->read_json();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ((*refused)["type"], "error");
  // In-band, a read key cannot open the realtime socket.
  auto in_band = open(port(), "/realtime");
  in_band->send_json({{"type", "auth"}, {"token", "k-read"}});
  auto scope = in_band->read_json();
  ASSERT_TRUE(scope.has_value());
  EXPECT_NE((*scope)["error"]["message"].get<std::string>().find("'inference'"), std::string::npos);
}

TEST_F(WebSocketTest, OriginsFollowTheCorsRules) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--cors-origins", "http://app.example"}));
  WsClient evil(port());
  EXPECT_EQ(evil.handshake("/logs/stream", {{"Origin", "http://evil.example"}}).status, 403);
  WsClient rebound(port());
  EXPECT_EQ(rebound.handshake("/logs/stream", {{"Host", "evil.example:" + std::to_string(port())}})
                .status,
            403)
      << "DNS rebinding";
  open(port(), "/logs/stream", {{"Origin", "http://app.example"}});
  open(port(), "/logs/stream", {{"Origin", "http://127.0.0.1:" + std::to_string(port())}});
}

TEST_F(WebSocketTest, ALogReaderTooSlowIsClosed) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (int i = 0; i < 40; ++i) {  // lines for every snapshot to hold
    ASSERT_EQ(http_post(port(), "/api/v1/log-level", json{{"level", "info"}}).status, 200);
  }
  WsClient c(port());
  const int small = 4096;  // a client that reads nothing holds little
  ::setsockopt(c.raw().fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  ASSERT_EQ(c.handshake("/logs/stream").status, 101);
  // Each subscribe sends a snapshot the client does not read.
  std::string subscribes;
  for (int i = 0; i < 2000; ++i) {
    subscribes += WsClient::frame(0x1, R"({"type":"logs.subscribe","after_seq":null})");
  }
  ASSERT_TRUE(c.send_raw(subscribes));
  std::optional<WsClient::Frame> f;
  while ((f = c.read_frame()) && f->opcode != 0x8) {
  }
  ASSERT_TRUE(f.has_value()) << "a close frame at the end of what was sent";
  EXPECT_EQ(f->close_code(), 1008) << f->close_reason();
  EXPECT_EQ(http_get(port(), "/live").status, 200);
}

TEST_F(WebSocketTest, TheCloseHandshake) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto c = open(port(), "/logs/stream");
  ASSERT_TRUE(c->send_close(1000, "OK"));
  auto f = c->read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, 0x8);
  EXPECT_EQ(f->close_code(), 1000);
  EXPECT_TRUE(c->raw().read_to_eof());
  // Bad JSON is answered, and the socket stays open.
  auto d = open(port(), "/logs/stream");
  d->send_text("{not json");
  auto error = d->read_json();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ((*error)["type"], "error");
  EXPECT_TRUE((*error)["error"]["message"].get<std::string>().starts_with("Invalid JSON: "));
  ASSERT_NO_FATAL_FAILURE(expect_snapshot(*d));
}

TEST_F(WebSocketTest, RealtimeTranscribesAToneBurstThroughTheFakeWhisperServer) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (int p : {port(), socket_port()}) {
    SCOPED_TRACE(p);
    auto c = open(p, "/v1/realtime?model=user.w");
    ASSERT_TRUE(c->read_until_type("session.created").has_value());
    auto append = [&c](int ms, double amplitude) {
      for (int done = 0; done < ms; done += 100) {
        c->send_json(
            {{"type", "input_audio_buffer.append"}, {"audio", pcm_base64(100, amplitude)}});
      }
    };
    append(500, 0.0);
    append(1200, 0.3);
    append(1500, 0.0);
    auto started = c->read_until_type("input_audio_buffer.speech_started");
    ASSERT_TRUE(started.has_value());
    EXPECT_EQ((*started)["audio_start_ms"], 500);
    auto stopped = c->read_until_type("input_audio_buffer.speech_stopped");
    ASSERT_TRUE(stopped.has_value());
    EXPECT_EQ((*stopped)["audio_end_ms"], 1700);
    auto done = c->read_until_type("conversation.item.input_audio_transcription.completed");
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ((*done)["item_id"], (*started)["item_id"]);
    // The fake names what it got: the segment as a WAV, 300 ms either side.
    const int samples = (1700 + 300 - (500 - 300)) * kPcmRate / 1000;
    EXPECT_EQ((*done)["transcript"], "fake transcript of " + std::to_string(44 + 2 * samples) +
                                         " bytes from realtime_audio.wav");
  }
  // Each segment was one request through the router, counted as such.
  const json h = health(port());
  EXPECT_EQ(loaded_names(h), Names{"user.w"});
}

TEST_F(WebSocketTest, RealtimeWithoutDetectionCommitsByHand) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto c = open(port(), "/api/v1/realtime?model=user.w");
  ASSERT_TRUE(c->read_until_type("session.created").has_value());
  c->send_json({{"type", "session.update"}, {"session", {{"turn_detection", nullptr}}}});
  auto updated = c->read_until_type("session.updated");
  ASSERT_TRUE(updated.has_value());
  EXPECT_TRUE((*updated)["session"]["turn_detection"].is_null());
  c->send_json({{"type", "input_audio_buffer.append"}, {"audio", pcm_base64(800, 0.2)}});
  c->send_json({{"type", "input_audio_buffer.commit"}});
  ASSERT_TRUE(c->read_until_type("input_audio_buffer.committed").has_value());
  auto done = c->read_until_type("conversation.item.input_audio_transcription.completed");
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ((*done)["transcript"], "fake transcript of " + std::to_string(44 + 2 * 12800) +
                                       " bytes from realtime_audio.wav");
  c->send_json({{"type", "input_audio_buffer.clear"}});
  EXPECT_TRUE(c->read_until_type("input_audio_buffer.cleared").has_value());
  // An unknown model is the transcription's error, and the socket goes on.
  c->send_json({{"type", "session.update"}, {"session", {{"model", "user.nothing"}}}});
  ASSERT_TRUE(c->read_until_type("session.updated").has_value());
  c->send_json({{"type", "input_audio_buffer.append"}, {"audio", pcm_base64(300, 0.2)}});
  c->send_json({{"type", "input_audio_buffer.commit"}});
  auto error = c->read_until_type("error");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ((*error)["error"]["type"], "transcription_error");
}

}  // namespace
}  // namespace lemon::testing
