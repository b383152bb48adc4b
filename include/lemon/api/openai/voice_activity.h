// Voice activity detection for realtime transcription (the `/realtime`
// socket, realtime_session.h): an energy detector over 20 ms frames of
// 16 kHz mono PCM16, with the settings Lemonade documents for its
// `turn_detection`:
// - a frame is voiced when its RMS (samples scaled to [-1, 1]) is above
//   `threshold` (0.01);
// - speech starts once voiced frames in a row last `prefix_padding_ms`
//   (250; Lemonade's meaning: the shortest speech, not audio kept before it),
//   at the first of them; a silent frame before that starts the count again;
// - speech stops once silent frames in a row last `silence_duration_ms`
//   (800), at the first of them.
// A pure function of the samples fed (no clock): the same audio gives the
// same events, whatever the chunks it came in.
//
// Thread-safety: a value type; one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lemon::api {

struct VadSettings {
  double threshold = 0.01;
  int silence_duration_ms = 800;
  int prefix_padding_ms = 250;
};

class VoiceActivityDetector {
 public:
  static constexpr int kSampleRate = 16000;
  static constexpr std::size_t kFrameSamples = 320;  // 20 ms

  explicit VoiceActivityDetector(VadSettings settings = {}) : settings_(settings) {}

  struct Event {
    enum class Kind { kSpeechStarted, kSpeechStopped };
    Kind kind = Kind::kSpeechStarted;
    std::uint64_t sample = 0;  // where it happened, counted from the first sample fed
  };
  // Feeds the next samples; the events they complete, in order.
  std::vector<Event> feed(std::span<const std::int16_t> samples);

  bool speaking() const { return speaking_; }
  // Samples fed so far (whole frames and the part of one still held).
  std::uint64_t samples_fed() const { return fed_; }
  // Where the current speech started (when speaking()).
  std::uint64_t speech_start() const { return run_start_; }
  // Forgets speech and silence; the sample count goes on.
  void reset();
  const VadSettings& settings() const { return settings_; }
  void set_settings(const VadSettings& settings) { settings_ = settings; }

  // The RMS of `samples` scaled to [-1, 1] (0 for none).
  static double rms(std::span<const std::int16_t> samples);

 private:
  void frame(std::span<const std::int16_t> samples, std::uint64_t at, std::vector<Event>& out);

  VadSettings settings_;
  std::vector<std::int16_t> partial_;  // less than a frame, waiting for the rest
  std::uint64_t fed_ = 0;
  bool speaking_ = false;
  std::uint64_t run_start_ = 0;     // the first voiced frame of the run (or the speech)
  std::uint64_t voiced_ = 0;        // voiced samples in a row while not speaking
  std::uint64_t silent_start_ = 0;  // the first silent frame of the run while speaking
  std::uint64_t silent_ = 0;        // silent samples in a row while speaking
};

}  // namespace lemon::api
