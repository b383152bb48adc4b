#include "lemon/backends/backend_secret.h"

#include <openssl/rand.h>

#include <array>
#include <stdexcept>

#include "lemon/core/hex.h"

namespace lemon {

std::string make_backend_secret() {
  std::array<unsigned char, 32> bytes{};
  // OpenSSL's generator is seeded from the OS (getrandom) and fails rather
  // than hand out weak bytes.
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("the OS random number generator failed");
  }
  return lower_hex(bytes.data(), bytes.size());
}

}  // namespace lemon
