#include "lemon/core/duration_text.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace lemon {

std::optional<std::chrono::milliseconds> parse_keep_alive_seconds(double seconds) {
  if (!std::isfinite(seconds)) {
    return std::nullopt;
  }
  if (seconds < 0) {
    return std::chrono::milliseconds(-1);
  }
  if (seconds > 1e9) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<long long>(std::llround(seconds * 1000.0)));
}

std::optional<std::chrono::milliseconds> parse_keep_alive(const std::string& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  char* end = nullptr;
  double plain = std::strtod(text.c_str(), &end);
  if (*end == '\0') {
    return parse_keep_alive_seconds(plain);  // "300", "-1"
  }
  // A Go-style duration: one or more <number><unit>, units h, m, s, ms.
  bool negative = false;
  std::size_t pos = 0;
  if (text[0] == '-') {
    negative = true;
    pos = 1;
  }
  double total_ms = 0;
  bool any = false;
  while (pos < text.size()) {
    const char* start = text.c_str() + pos;
    double value = std::strtod(start, &end);
    if (end == start || value < 0) {
      return std::nullopt;
    }
    pos += static_cast<std::size_t>(end - start);
    std::string unit;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) {
      unit += text[pos++];
    }
    double scale = 0;
    if (unit == "h") {
      scale = 3600000;
    } else if (unit == "m") {
      scale = 60000;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "ms") {
      scale = 1;
    } else {
      return std::nullopt;
    }
    total_ms += value * scale;
    any = true;
  }
  if (!any) {
    return std::nullopt;
  }
  if (negative) {
    return std::chrono::milliseconds(-1);
  }
  return parse_keep_alive_seconds(total_ms / 1000.0);
}

}  // namespace lemon
