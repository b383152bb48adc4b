#include "lemon/net/base64.h"

#include <openssl/evp.h>

namespace lemon::net {
namespace {

bool base64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int n = ::EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(bytes.data()),
                                  static_cast<int>(bytes.size()));
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  std::size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  for (std::size_t i = 0; i + padding < text.size(); ++i) {
    if (!base64_char(text[i])) {
      return std::nullopt;  // EVP_DecodeBlock would skip whitespace and read past a '='
    }
  }
  if (text.empty()) {
    return std::string();
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = ::EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(text.data()),
                                  static_cast<int>(text.size()));
  if (n < 0 || static_cast<std::size_t>(n) != out.size()) {
    return std::nullopt;
  }
  // EVP_DecodeBlock counts the padding as zero bytes.
  out.resize(out.size() - padding);
  return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  std::string standard;
  standard.reserve(text.size() + 3);
  for (char c : text) {
    if (c == '+' || c == '/') {
      return std::nullopt;  // not the URL-safe alphabet
    }
    standard += c == '-' ? '+' : c == '_' ? '/' : c;
  }
  while (standard.size() % 4 != 0) {
    standard += '=';
  }
  return base64_decode(standard);
}

}  // namespace lemon::net
