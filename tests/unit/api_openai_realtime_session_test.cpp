// One `/realtime` session (realtime_session.h) with a fake backend and
// socket: the events for a tone burst with the detector on, a manual commit
// with it off, the buffer's rules, session.update's checks, and a failed
// transcription.
#include "lemon/api/openai/realtime_session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "lemon/api/openai/realtime_audio.h"
#include "lemon/net/base64.h"
#include "support/fake_json_socket.h"

namespace lemon::api {
namespace {

using lemon::testing::FakeJsonSocket;
using nlohmann::json;

constexpr int kSessionRate = 16000;

// Transcribes synchronously: "<model>: <wav bytes> bytes", or fails when
// told to; refuses the model "secret".
class FakeBackend final : public RealtimeBackend {
 public:
  Result<std::string> transcribe(const std::string& model, const http::ApiKey*, std::string wav,
                                 const std::function<bool()>&) override {
    wavs.push_back(wav);
    if (fail) {
      return Error(ErrorCode::kModelNotFound, "model '" + model + "' was not found");
    }
    return model + ": " + std::to_string(wav.size()) + " bytes";
  }
  void run(std::function<void()> work) override { work(); }
  std::optional<Error> refuse_model(const http::ApiKey*, const std::string& model) override {
    if (model == "secret") {
      return Error(ErrorCode::kForbidden, "API key 'k' may not use model 'secret'", "model");
    }
    return std::nullopt;
  }
  std::vector<std::string> wavs;
  bool fail = false;
};

std::vector<std::int16_t> session_tone(int ms, double amplitude) {
  std::vector<std::int16_t> out(static_cast<std::size_t>(kSessionRate * ms / 1000));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::int16_t>(
        amplitude * 32767.0 * std::sin(2.0 * M_PI * 440.0 * static_cast<double>(i) / kSessionRate));
  }
  return out;
}

std::string base64_pcm(const std::vector<std::int16_t>& samples) {
  std::string bytes;
  for (auto s : samples) {
    bytes += static_cast<char>(static_cast<std::uint16_t>(s) & 0xFF);
    bytes += static_cast<char>((static_cast<std::uint16_t>(s) >> 8) & 0xFF);
  }
  return net::base64_encode(bytes);
}

class RealtimeSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    session_ = std::make_shared<RealtimeSession>(backend_, http::SocketCaller{}, "user.w",
                                                 "sess_0123456789abcdef01234567");
    session_->on_open(socket_);
  }
  void send(const json& message) { session_->on_message(message["type"], message); }
  // Appends `samples` in 100 ms pieces, as a microphone would.
  void append(const std::vector<std::int16_t>& samples) {
    for (std::size_t i = 0; i < samples.size(); i += 1600) {
      const std::vector<std::int16_t> piece(
          samples.begin() + static_cast<long>(i),
          samples.begin() + static_cast<long>(std::min(samples.size(), i + 1600)));
      send({{"type", "input_audio_buffer.append"}, {"audio", base64_pcm(piece)}});
    }
  }

  FakeBackend backend_;
  std::shared_ptr<FakeJsonSocket> socket_ = std::make_shared<FakeJsonSocket>();
  std::shared_ptr<RealtimeSession> session_;
};

TEST_F(RealtimeSessionTest, OpensWithSessionCreated) {
  auto events = socket_->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "session.created");
  EXPECT_EQ(events[0]["session"]["id"], "sess_0123456789abcdef01234567");
  EXPECT_EQ(events[0]["session"]["model"], "user.w");
  EXPECT_EQ(events[0]["session"]["turn_detection"]["threshold"], 0.01);
  EXPECT_EQ(events[0]["session"]["turn_detection"]["silence_duration_ms"], 800);
  EXPECT_EQ(events[0]["session"]["turn_detection"]["prefix_padding_ms"], 250);
  EXPECT_TRUE(events[0]["event_id"].is_string());
}

TEST_F(RealtimeSessionTest, AToneBurstIsASegmentAndATranscription) {
  socket_->clear();
  append(std::vector<std::int16_t>(kSessionRate, 0));  // 1 s of silence
  append(session_tone(1500, 0.3));
  append(std::vector<std::int16_t>(2 * kSessionRate, 0));
  const auto events = socket_->events();
  const auto types = socket_->types();
  // Started, interim deltas while it lasts (one a second, of the whole
  // segment so far), stopped, completed.
  ASSERT_GE(types.size(), 4u);
  EXPECT_EQ(types.front(), "input_audio_buffer.speech_started");
  EXPECT_EQ(types[types.size() - 2], "input_audio_buffer.speech_stopped");
  EXPECT_EQ(types.back(), "conversation.item.input_audio_transcription.completed");
  for (std::size_t i = 1; i + 2 < types.size(); ++i) {
    EXPECT_EQ(types[i], "conversation.item.input_audio_transcription.delta");
  }
  EXPECT_EQ(events.front()["audio_start_ms"], 1000);
  EXPECT_EQ(events[events.size() - 2]["audio_end_ms"], 2500);
  const std::string item = events.front()["item_id"];
  for (const auto& e : events) {
    EXPECT_EQ(e["item_id"], item) << e.dump();
  }
  // The first interim: the segment's first second of speech and its pre-roll.
  EXPECT_EQ(events[1]["delta"],
            "user.w: " + std::to_string(44 + 2 * (1300 * kSessionRate / 1000)) + " bytes");
  // The segment: 300 ms before the speech to 300 ms after it, as a WAV.
  const std::size_t samples = (2500 + 300 - (1000 - 300)) * kSessionRate / 1000;
  EXPECT_EQ(events.back()["transcript"], "user.w: " + std::to_string(44 + 2 * samples) + " bytes");
  EXPECT_EQ(events.back()["content_index"], 0);
  ASSERT_EQ(backend_.wavs.size(), types.size() - 2) << "the interims, then the final";
  EXPECT_EQ(backend_.wavs.back().substr(0, 4), "RIFF");
  EXPECT_EQ(backend_.wavs.back().substr(8, 4), "WAVE");
}

TEST_F(RealtimeSessionTest, WithTheDetectorOffACommitTranscribesTheBuffer) {
  send({{"type", "session.update"}, {"session", {{"turn_detection", nullptr}}}});
  auto updated = socket_->events().back();
  EXPECT_EQ(updated["type"], "session.updated");
  EXPECT_TRUE(updated["session"]["turn_detection"].is_null());
  socket_->clear();
  append(session_tone(300, 0.3));
  EXPECT_TRUE(socket_->events().empty()) << "no detection events";
  send({{"type", "input_audio_buffer.commit"}});
  ASSERT_EQ(socket_->types(),
            (std::vector<std::string>{"input_audio_buffer.committed",
                                      "conversation.item.input_audio_transcription.completed"}));
  // 300 ms padded to the 500 ms a segment has at least.
  EXPECT_EQ(socket_->events()[1]["transcript"],
            "user.w: " + std::to_string(44 + 2 * 8000) + " bytes");
  socket_->clear();
  send({{"type", "input_audio_buffer.commit"}});
  ASSERT_EQ(socket_->types(), std::vector<std::string>{"error"}) << "nothing left to commit";
}

TEST_F(RealtimeSessionTest, ACommitWithoutSpeechClearsAndClearAnswers) {
  socket_->clear();
  append(std::vector<std::int16_t>(kSessionRate / 2, 0));
  send({{"type", "input_audio_buffer.commit"}});
  EXPECT_EQ(socket_->types(), std::vector<std::string>{"input_audio_buffer.cleared"});
  socket_->clear();
  send({{"type", "input_audio_buffer.clear"}});
  EXPECT_EQ(socket_->types(), std::vector<std::string>{"input_audio_buffer.cleared"});
  EXPECT_TRUE(backend_.wavs.empty());
}

TEST_F(RealtimeSessionTest, SessionUpdateChecksWhatItChanges) {
  socket_->clear();
  send({{"type", "session.update"},
        {"session",
         {{"model", "user.other"},
          {"turn_detection", {{"threshold", 0.2}, {"silence_duration_ms", 500}}}}}});
  auto updated = socket_->events().back();
  EXPECT_EQ(updated["session"]["model"], "user.other");
  EXPECT_EQ(updated["session"]["turn_detection"]["threshold"], 0.2);
  EXPECT_EQ(updated["session"]["turn_detection"]["silence_duration_ms"], 500);
  EXPECT_EQ(updated["session"]["turn_detection"]["prefix_padding_ms"], 250);
  for (const json& bad :
       {json{{"model", 5}}, json{{"model", "secret"}}, json{{"turn_detection", "on"}},
        json{{"turn_detection", {{"threshold", 2}}}},
        json{{"turn_detection", {{"silence_duration_ms", "x"}}}}}) {
    socket_->clear();
    send({{"type", "session.update"}, {"session", bad}});
    ASSERT_EQ(socket_->types(), std::vector<std::string>{"error"}) << bad.dump();
  }
  socket_->clear();
  send({{"type", "transcription_session.update"},
        {"session", {{"input_audio_transcription", {{"model", "user.w"}}}}}});
  EXPECT_EQ(socket_->events().back()["type"], "transcription_session.updated");
  EXPECT_EQ(socket_->events().back()["session"]["model"], "user.w");
}

TEST_F(RealtimeSessionTest, BadMessagesGetErrors) {
  socket_->clear();
  send({{"type", "response.create"}});
  send({{"type", "input_audio_buffer.append"}, {"audio", "not base64!"}});
  send({{"type", "input_audio_buffer.append"}});
  const auto events = socket_->events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["error"]["message"], "Unknown message type: response.create");
  EXPECT_EQ(events[0]["error"]["type"], "invalid_request_error");
  EXPECT_EQ(events[1]["type"], "error");
  EXPECT_EQ(events[2]["type"], "error");
}

TEST_F(RealtimeSessionTest, AFailedTranscriptionIsATranscriptionError) {
  backend_.fail = true;
  send({{"type", "session.update"}, {"session", {{"turn_detection", nullptr}}}});
  socket_->clear();
  append(session_tone(600, 0.3));
  send({{"type", "input_audio_buffer.commit"}});
  const auto events = socket_->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["type"], "error");
  EXPECT_EQ(events[1]["error"]["type"], "transcription_error");
  EXPECT_EQ(events[1]["error"]["message"], "Transcription failed: model 'user.w' was not found");
}

TEST_F(RealtimeSessionTest, NothingIsTranscribedAfterTheSocketCloses) {
  send({{"type", "session.update"}, {"session", {{"turn_detection", nullptr}}}});
  append(session_tone(600, 0.3));
  session_->on_closed();
  send({{"type", "input_audio_buffer.commit"}});
  EXPECT_TRUE(backend_.wavs.empty());
}

TEST(RealtimeAudio, WavHeaderAndPadding) {
  const std::vector<std::int16_t> samples = {1, -1, 256};
  const std::string wav = pcm16_wav(samples, 16000, 5);
  ASSERT_EQ(wav.size(), 44u + 10u);
  EXPECT_EQ(wav.substr(0, 4), "RIFF");
  EXPECT_EQ(wav.substr(12, 4), "fmt ");
  EXPECT_EQ(wav.substr(36, 4), "data");
  EXPECT_EQ(static_cast<unsigned char>(wav[24]) | (static_cast<unsigned char>(wav[25]) << 8),
            16000);
  EXPECT_EQ(wav.substr(44, 6), std::string("\x01\x00\xFF\xFF\x00\x01", 6));
  EXPECT_EQ(wav.substr(50), std::string(4, '\0'));
  auto decoded = decode_pcm16_base64(net::base64_encode(std::string("\x01\x00\xFF\xFF\x07", 5)));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(*decoded, (std::vector<std::int16_t>{1, -1})) << "an odd last byte is dropped";
  EXPECT_FALSE(decode_pcm16_base64("%%%").has_value());
}

}  // namespace
}  // namespace lemon::api
