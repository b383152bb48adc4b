#include "lemon/core/text.h"

namespace lemon {
namespace {

std::string_view trim_any_of(std::string_view s, std::string_view chars) {
  const auto begin = s.find_first_not_of(chars);
  if (begin == std::string_view::npos) {
    return {};
  }
  const auto end = s.find_last_not_of(chars);
  return s.substr(begin, end - begin + 1);
}

}  // namespace

std::string_view trim_ows(std::string_view s) {
  return trim_any_of(s, " \t");
}

std::string_view trim_whitespace(std::string_view s) {
  return trim_any_of(s, " \t\r\n\v\f");
}

std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) {
    return s;
  }
  std::size_t end = max_bytes;
  // Back over continuation bytes (10xxxxxx) to the start of the character
  // the bound cuts.
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) {
    --end;
  }
  return s.substr(0, end);
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const auto at = s.find(separator);
    out.push_back(s.substr(0, at));
    s = at == std::string_view::npos ? std::string_view() : s.substr(at + 1);
  }
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (&item != &items.front()) {
      out += separator;
    }
    out += item;
  }
  return out;
}

}  // namespace lemon
