// Realtime transcription (the `/realtime` WebSocket) against a
// real whisper-server (LEMON_REAL_WHISPER_SERVER) and a tiny random-weight
// whisper model: a tone burst is detected as speech and its segment
// transcribed, and a committed buffer too. The weights are random, so the
// text is noise; the tests check the events, their order and fields, and
// that each segment went through the router as a transcription request.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "lemon/net/base64.h"
#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/websocket_client.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

constexpr int kRealtimeRate = 16000;

std::string realtime_pcm(int ms, double amplitude) {
  std::string bytes;
  const int n = kRealtimeRate * ms / 1000;
  for (int i = 0; i < n; ++i) {
    const auto s = static_cast<std::int16_t>(amplitude * 32767.0 *
                                             std::sin(2.0 * M_PI * 440.0 * i / kRealtimeRate));
    bytes += static_cast<char>(static_cast<std::uint16_t>(s) & 0xFF);
    bytes += static_cast<char>((static_cast<std::uint16_t>(s) >> 8) & 0xFF);
  }
  return net::base64_encode(bytes);
}

class WhisperRealtimeTest : public RealWhisperTest {
 protected:
  std::unique_ptr<WsClient> open_realtime() {
    auto c = std::make_unique<WsClient>(port());
    auto r = c->handshake("/v1/realtime?model=user.w");
    EXPECT_EQ(r.status, 101) << r.head << r.body;
    return c;
  }
  static void append(WsClient& c, int ms, double amplitude) {
    for (int done = 0; done < ms; done += 100) {
      c.send_json({{"type", "input_audio_buffer.append"}, {"audio", realtime_pcm(100, amplitude)}});
    }
  }
  // The next event that is not an interim delta, with the type names seen.
  static std::optional<json> next_event(WsClient& c) {
    for (;;) {
      auto e = c.read_json();
      if (!e || (*e)["type"] != "conversation.item.input_audio_transcription.delta") {
        return e;
      }
      EXPECT_TRUE((*e)["delta"].is_string()) << e->dump();
    }
  }
};

TEST_F(WhisperRealtimeTest, AToneBurstIsDetectedAndTranscribed) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("w"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  auto c = open_realtime();
  auto created = c->read_json();
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ((*created)["type"], "session.created");
  append(*c, 500, 0.0);
  append(*c, 1500, 0.3);
  append(*c, 1200, 0.0);
  auto started = next_event(*c);
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ((*started)["type"], "input_audio_buffer.speech_started") << started->dump();
  EXPECT_EQ((*started)["audio_start_ms"], 500);
  auto stopped = next_event(*c);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["type"], "input_audio_buffer.speech_stopped") << stopped->dump();
  EXPECT_EQ((*stopped)["audio_end_ms"], 2000);
  auto completed = next_event(*c);
  ASSERT_TRUE(completed.has_value());
  ASSERT_EQ((*completed)["type"], "conversation.item.input_audio_transcription.completed")
      << completed->dump();
  EXPECT_TRUE((*completed)["transcript"].is_string()) << completed->dump();
  EXPECT_EQ((*completed)["item_id"], (*started)["item_id"]);
  // The model was loaded for it, through the router, and is idle now.
  const json h = health(port());
  ASSERT_EQ(loaded_names(h), Names{"user.w"});
  EXPECT_EQ(loaded_field(h, "user.w", "in_flight"), 0);
}

TEST_F(WhisperRealtimeTest, ACommittedBufferIsTranscribed) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("w"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  auto c = open_realtime();
  ASSERT_TRUE(c->read_until_type("session.created").has_value());
  c->send_json({{"type", "session.update"}, {"session", {{"turn_detection", nullptr}}}});
  ASSERT_TRUE(c->read_until_type("session.updated").has_value());
  append(*c, 1000, 0.2);
  c->send_json({{"type", "input_audio_buffer.commit"}});
  auto committed = c->read_json();
  ASSERT_TRUE(committed.has_value());
  EXPECT_EQ((*committed)["type"], "input_audio_buffer.committed") << committed->dump();
  auto completed = c->read_json();
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ((*completed)["type"], "conversation.item.input_audio_transcription.completed")
      << completed->dump();
  EXPECT_TRUE((*completed)["transcript"].is_string());
  EXPECT_EQ((*completed)["item_id"], (*committed)["item_id"]);
  ASSERT_TRUE(c->send_close(1000, "OK"));
  auto closed = c->read_frame();
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->close_code(), 1000);
}

}  // namespace
}  // namespace lemon::testing
