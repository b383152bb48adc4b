#include "fake_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace fake {

int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

int64_t unix_seconds() {
  return static_cast<int64_t>(std::time(nullptr));
}

uint64_t fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                 (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) {
      v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    }
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

int approx_tokens(std::string_view text) {
  return static_cast<int>(text.size() / 4) + 1;
}

std::string token_piece(int i) {
  static const char* const kWords[] = {"The",   " quick", " brown", " fox",  " jumps",
                                       " over", " the",   " lazy",  " dog.", " "};
  constexpr int kCount = sizeof(kWords) / sizeof(kWords[0]);
  return kWords[i % kCount];
}

std::string generated_text(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += token_piece(i);
  }
  return out;
}

std::string make_id(std::string_view prefix) {
  static std::atomic<uint64_t> counter{0};
  uint64_t n = counter.fetch_add(1) + 1;
  char buf[40];
  std::string seed = std::to_string(getpid()) + ":" + std::to_string(n);
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(fnv1a(seed)));
  return std::string(prefix) + buf;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_data(const json& j) {
  return "data: " + dump(j) + "\n\n";
}

std::string sse_event(std::string_view type, const json& j) {
  return "event: " + std::string(type) + "\n" + sse_data(j);
}

}  // namespace fake
