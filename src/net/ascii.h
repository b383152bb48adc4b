// ASCII character classes for the HTTP parsers: HTTP's syntax is ASCII
// (RFC 9110 5.1, RFC 3986 2), so these use no locale and make no call; they
// run for every request.
// Internal to src/net. Thread-safety: pure functions.
#pragma once

namespace lemon::net::ascii {

// 0-15 for a hexadecimal digit (either case), else -1.
constexpr int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

constexpr bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace lemon::net::ascii
