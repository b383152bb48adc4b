// The audio of a realtime session: base64 PCM16 as clients append it, and
// the WAV file a segment is sent to whisper-server as (in memory; audio
// never touches the disk).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lemon::api {

// The samples of base64 PCM16 little-endian mono audio; nullopt when the
// text is not base64. An odd last byte is dropped.
std::optional<std::vector<std::int16_t>> decode_pcm16_base64(std::string_view text);

// A RIFF/WAVE file of `samples` (PCM, mono, 16 bits, `sample_rate`), with
// zeros after them up to `min_samples`.
std::string pcm16_wav(std::span<const std::int16_t> samples, int sample_rate = 16000,
                      std::size_t min_samples = 0);

}  // namespace lemon::api
