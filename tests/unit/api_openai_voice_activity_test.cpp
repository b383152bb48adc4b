// The realtime socket's voice activity detector (voice_activity.h) on
// generated signals: silence, a tone burst, noise below and above the
// threshold, bursts too short to be speech, and chunking that must not
// change the events.
#include "lemon/api/openai/voice_activity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace lemon::api {
namespace {

constexpr int kVadRate = VoiceActivityDetector::kSampleRate;

std::vector<std::int16_t> vad_silence(int ms) {
  return std::vector<std::int16_t>(static_cast<std::size_t>(kVadRate * ms / 1000), 0);
}

// A 440 Hz tone of `amplitude` (0-1).
std::vector<std::int16_t> vad_tone(int ms, double amplitude) {
  std::vector<std::int16_t> out(static_cast<std::size_t>(kVadRate * ms / 1000));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::int16_t>(
        amplitude * 32767.0 * std::sin(2.0 * M_PI * 440.0 * static_cast<double>(i) / kVadRate));
  }
  return out;
}

// White noise of RMS about `level` (0-1), the same every run.
std::vector<std::int16_t> vad_noise(int ms, double level, unsigned seed = 7) {
  std::mt19937 random(seed);
  std::normal_distribution<double> gauss(0.0, level * 32767.0);
  std::vector<std::int16_t> out(static_cast<std::size_t>(kVadRate * ms / 1000));
  for (auto& s : out) {
    s = static_cast<std::int16_t>(std::clamp(gauss(random), -32767.0, 32767.0));
  }
  return out;
}

std::vector<std::int16_t> vad_join(std::initializer_list<std::vector<std::int16_t>> parts) {
  std::vector<std::int16_t> out;
  for (const auto& p : parts) {
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

using Kind = VoiceActivityDetector::Event::Kind;

std::vector<VoiceActivityDetector::Event> feed_in_chunks(const std::vector<std::int16_t>& audio,
                                                         std::size_t chunk,
                                                         VadSettings settings = {}) {
  VoiceActivityDetector vad(settings);
  std::vector<VoiceActivityDetector::Event> events;
  for (std::size_t i = 0; i < audio.size(); i += chunk) {
    const std::size_t n = std::min(chunk, audio.size() - i);
    for (const auto& e : vad.feed(std::span(audio).subspan(i, n))) {
      events.push_back(e);
    }
  }
  return events;
}

TEST(VoiceActivity, SilenceIsNotSpeech) {
  EXPECT_TRUE(feed_in_chunks(vad_silence(5000), 1600).empty());
}

TEST(VoiceActivity, ATonesBurstIsOneSpeechSegment) {
  const auto audio = vad_join({vad_silence(1000), vad_tone(1500, 0.3), vad_silence(2000)});
  const auto events = feed_in_chunks(audio, 1600);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, Kind::kSpeechStarted);
  EXPECT_EQ(events[0].sample, 16000u) << "at the burst's first frame";
  EXPECT_EQ(events[1].kind, Kind::kSpeechStopped);
  EXPECT_EQ(events[1].sample, 16000u + 24000u) << "at the burst's end";
}

TEST(VoiceActivity, QuietNoiseIsNotSpeechAndLoudNoiseIs) {
  EXPECT_TRUE(feed_in_chunks(vad_noise(4000, 0.003), 1600).empty()) << "below the 0.01 threshold";
  const auto loud = vad_join({vad_silence(500), vad_noise(1000, 0.1), vad_silence(1500)});
  const auto events = feed_in_chunks(loud, 1600);
  ASSERT_EQ(events.size(), 2u) << "an energy detector hears loud noise as speech";
  EXPECT_EQ(events[0].sample, 8000u);
  EXPECT_EQ(events[1].sample, 24000u);
  // A higher threshold ignores it.
  EXPECT_TRUE(feed_in_chunks(loud, 1600, VadSettings{0.2, 800, 250}).empty());
}

TEST(VoiceActivity, BurstsShorterThanTheMinimumSpeechAreIgnored) {
  // 200 ms clicks with silence between: never 250 ms of voice in a row.
  const auto audio =
      vad_join({vad_tone(200, 0.5), vad_silence(300), vad_tone(200, 0.5), vad_silence(1000)});
  EXPECT_TRUE(feed_in_chunks(audio, 320).empty());
  const auto longer = feed_in_chunks(vad_join({vad_tone(300, 0.5), vad_silence(1000)}), 320,
                                     VadSettings{0.01, 800, 250});
  EXPECT_EQ(longer.size(), 2u);
}

TEST(VoiceActivity, ShortPausesDoNotEndSpeech) {
  const auto audio =
      vad_join({vad_tone(600, 0.3), vad_silence(500), vad_tone(600, 0.3), vad_silence(1000)});
  const auto events = feed_in_chunks(audio, 1600);
  ASSERT_EQ(events.size(), 2u) << "a 500 ms pause is under silence_duration_ms";
  EXPECT_EQ(events[1].sample, static_cast<std::uint64_t>(kVadRate * 1700 / 1000));
  const auto eager = feed_in_chunks(audio, 1600, VadSettings{0.01, 400, 250});
  EXPECT_EQ(eager.size(), 4u) << "with 400 ms it is two segments";
}

TEST(VoiceActivity, TheSameAudioGivesTheSameEventsWhateverTheChunks) {
  const auto audio = vad_join({vad_silence(300), vad_tone(900, 0.2), vad_silence(1200),
                               vad_noise(700, 0.05), vad_silence(900)});
  const auto reference = feed_in_chunks(audio, audio.size());
  ASSERT_EQ(reference.size(), 4u);
  for (std::size_t chunk : {1u, 7u, 320u, 333u, 1600u, 4096u}) {
    const auto events = feed_in_chunks(audio, chunk);
    ASSERT_EQ(events.size(), reference.size()) << chunk;
    for (std::size_t i = 0; i < events.size(); ++i) {
      EXPECT_EQ(events[i].kind, reference[i].kind) << chunk;
      EXPECT_EQ(events[i].sample, reference[i].sample) << chunk;
    }
  }
}

TEST(VoiceActivity, ResetForgetsSpeechButKeepsCounting) {
  VoiceActivityDetector vad;
  const auto burst = vad_tone(500, 0.3);
  ASSERT_EQ(vad.feed(burst).size(), 1u);
  EXPECT_TRUE(vad.speaking());
  vad.reset();
  EXPECT_FALSE(vad.speaking());
  EXPECT_EQ(vad.samples_fed(), burst.size());
  EXPECT_TRUE(vad.feed(vad_silence(2000)).empty()) << "no stop for a speech it forgot";
  EXPECT_DOUBLE_EQ(VoiceActivityDetector::rms(vad_silence(20)), 0.0);
  EXPECT_NEAR(VoiceActivityDetector::rms(vad_tone(1000, 0.5)), 0.5 / std::sqrt(2.0), 0.01);
}

}  // namespace
}  // namespace lemon::api
