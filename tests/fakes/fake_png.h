// A minimal PNG encoder (8-bit RGB, uncompressed "stored" deflate blocks) for
// the images returned by the fake sd-server.
#pragma once

#include <cstdint>
#include <string>

namespace fake {

// A valid width x height PNG filled with a colour derived from `seed`, with a
// lighter diagonal so it is not a flat square. Returns the file bytes.
std::string make_png(int width, int height, uint64_t seed);

}  // namespace fake
