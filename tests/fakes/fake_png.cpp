#include "fake_png.h"

#include <array>

namespace fake {
namespace {

uint32_t crc32(const std::string& bytes) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) {
        c = (c & 1) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      }
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFU;
  for (unsigned char b : bytes) {
    c = kTable[(c ^ b) & 0xFF] ^ (c >> 8);
  }
  return c ^ 0xFFFFFFFFU;
}

uint32_t adler32(const std::string& bytes) {
  uint32_t a = 1;
  uint32_t b = 0;
  for (unsigned char c : bytes) {
    a = (a + c) % 65521U;
    b = (b + a) % 65521U;
  }
  return (b << 16) | a;
}

void put_be32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out += static_cast<char>((v >> shift) & 0xFF);
  }
}

void put_chunk(std::string& out, const char* type, const std::string& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  std::string typed = std::string(type, 4) + data;
  out += typed;
  put_be32(out, crc32(typed));
}

// zlib stream made of stored (uncompressed) deflate blocks.
std::string zlib_stored(const std::string& raw) {
  std::string z = "\x78\x01";
  size_t pos = 0;
  do {
    size_t len = raw.size() - pos < 65535 ? raw.size() - pos : 65535;
    bool last = pos + len == raw.size();
    z += static_cast<char>(last ? 1 : 0);
    z += static_cast<char>(len & 0xFF);
    z += static_cast<char>((len >> 8) & 0xFF);
    z += static_cast<char>(~len & 0xFF);
    z += static_cast<char>((~len >> 8) & 0xFF);
    z.append(raw, pos, len);
    pos += len;
  } while (pos < raw.size());
  put_be32(z, adler32(raw));
  return z;
}

}  // namespace

std::string make_png(int width, int height, uint64_t seed) {
  const unsigned char r = seed & 0xFF;
  const unsigned char g = (seed >> 8) & 0xFF;
  const unsigned char b = (seed >> 16) & 0xFF;
  std::string raw;
  for (int y = 0; y < height; ++y) {
    raw += '\0';  // filter type: none
    for (int x = 0; x < width; ++x) {
      bool diagonal = x == y;
      raw += static_cast<char>(diagonal ? 255 : r);
      raw += static_cast<char>(diagonal ? 255 : g);
      raw += static_cast<char>(diagonal ? 255 : b);
    }
  }
  std::string ihdr;
  put_be32(ihdr, static_cast<uint32_t>(width));
  put_be32(ihdr, static_cast<uint32_t>(height));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB, no interlace
  std::string png = "\x89PNG\r\n\x1a\n";
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", zlib_stored(raw));
  put_chunk(png, "IEND", "");
  return png;
}

}  // namespace fake
