// Bytes as lowercase hexadecimal text (digests, secrets).
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <string>

namespace lemon {

std::string lower_hex(const unsigned char* bytes, std::size_t size);

}  // namespace lemon
