#include "lemon/api/openai/voice_activity.h"

#include <algorithm>
#include <cmath>

namespace lemon::api {
namespace {

std::uint64_t ms_to_samples(int ms) {
  return static_cast<std::uint64_t>(std::max(ms, 0)) * VoiceActivityDetector::kSampleRate / 1000;
}

}  // namespace

double VoiceActivityDetector::rms(std::span<const std::int16_t> samples) {
  if (samples.empty()) {
    return 0.0;
  }
  double sum = 0.0;
  for (std::int16_t s : samples) {
    const double x = static_cast<double>(s) / 32768.0;
    sum += x * x;
  }
  return std::sqrt(sum / static_cast<double>(samples.size()));
}

std::vector<VoiceActivityDetector::Event> VoiceActivityDetector::feed(
    std::span<const std::int16_t> samples) {
  std::vector<Event> out;
  std::size_t i = 0;
  if (!partial_.empty()) {
    const std::size_t take = std::min(kFrameSamples - partial_.size(), samples.size());
    partial_.insert(partial_.end(), samples.begin(), samples.begin() + static_cast<long>(take));
    i = take;
    if (partial_.size() == kFrameSamples) {
      frame(partial_, fed_ - (kFrameSamples - take), out);
      partial_.clear();
    }
  }
  fed_ += i;
  while (samples.size() - i >= kFrameSamples) {
    frame(samples.subspan(i, kFrameSamples), fed_, out);
    i += kFrameSamples;
    fed_ += kFrameSamples;
  }
  partial_.insert(partial_.end(), samples.begin() + static_cast<long>(i), samples.end());
  fed_ += samples.size() - i;
  return out;
}

void VoiceActivityDetector::frame(std::span<const std::int16_t> samples, std::uint64_t at,
                                  std::vector<Event>& out) {
  const bool voiced = rms(samples) > settings_.threshold;
  if (!speaking_) {
    if (!voiced) {
      voiced_ = 0;
      return;
    }
    if (voiced_ == 0) {
      run_start_ = at;
    }
    voiced_ += samples.size();
    if (voiced_ >= std::max<std::uint64_t>(ms_to_samples(settings_.prefix_padding_ms), 1)) {
      speaking_ = true;
      silent_ = 0;
      out.push_back({Event::Kind::kSpeechStarted, run_start_});
    }
    return;
  }
  if (voiced) {
    silent_ = 0;
    return;
  }
  if (silent_ == 0) {
    silent_start_ = at;
  }
  silent_ += samples.size();
  if (silent_ >= std::max<std::uint64_t>(ms_to_samples(settings_.silence_duration_ms), 1)) {
    speaking_ = false;
    voiced_ = 0;
    out.push_back({Event::Kind::kSpeechStopped, silent_start_});
  }
}

void VoiceActivityDetector::reset() {
  speaking_ = false;
  voiced_ = 0;
  silent_ = 0;
  // A frame begun before the reset is still counted whole.
}

}  // namespace lemon::api
