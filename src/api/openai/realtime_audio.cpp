#include "lemon/api/openai/realtime_audio.h"

#include <algorithm>

#include "lemon/net/base64.h"

namespace lemon::api {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    out += static_cast<char>((v >> (8 * i)) & 0xFF);
  }
}

void put_u16(std::string& out, std::uint16_t v) {
  out += static_cast<char>(v & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
}

}  // namespace

std::optional<std::vector<std::int16_t>> decode_pcm16_base64(std::string_view text) {
  auto bytes = net::base64_decode(text);
  if (!bytes) {
    return std::nullopt;
  }
  std::vector<std::int16_t> samples(bytes->size() / 2);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto lo = static_cast<std::uint8_t>((*bytes)[2 * i]);
    const auto hi = static_cast<std::uint8_t>((*bytes)[2 * i + 1]);
    samples[i] = static_cast<std::int16_t>(static_cast<std::uint16_t>(lo | (hi << 8)));
  }
  return samples;
}

std::string pcm16_wav(std::span<const std::int16_t> samples, int sample_rate,
                      std::size_t min_samples) {
  const std::size_t count = std::max(samples.size(), min_samples);
  const auto data_bytes = static_cast<std::uint32_t>(count * 2);
  std::string out;
  out.reserve(44 + data_bytes);
  out += "RIFF";
  put_u32(out, 36 + data_bytes);
  out += "WAVEfmt ";
  put_u32(out, 16);  // the fmt chunk's size
  put_u16(out, 1);   // PCM
  put_u16(out, 1);   // mono
  put_u32(out, static_cast<std::uint32_t>(sample_rate));
  put_u32(out, static_cast<std::uint32_t>(sample_rate) * 2);  // bytes a second
  put_u16(out, 2);                                            // bytes a frame
  put_u16(out, 16);                                           // bits a sample
  out += "data";
  put_u32(out, data_bytes);
  for (std::int16_t s : samples) {
    put_u16(out, static_cast<std::uint16_t>(s));
  }
  out.append((count - samples.size()) * 2, '\0');
  return out;
}

}  // namespace lemon::api
