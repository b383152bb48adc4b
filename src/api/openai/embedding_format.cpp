#include "lemon/api/openai/embedding_format.h"

#include <cstring>

#include <nlohmann/json.hpp>

namespace lemon::api {

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    auto a = static_cast<unsigned char>(bytes[i]);
    auto b = static_cast<unsigned char>(bytes[i + 1]);
    auto c = static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[a >> 2];
    out += kAlphabet[((a & 0x03) << 4) | (b >> 4)];
    out += kAlphabet[((b & 0x0f) << 2) | (c >> 6)];
    out += kAlphabet[c & 0x3f];
  }
  if (i < bytes.size()) {
    auto a = static_cast<unsigned char>(bytes[i]);
    bool two = i + 1 < bytes.size();
    auto b = two ? static_cast<unsigned char>(bytes[i + 1]) : 0;
    out += kAlphabet[a >> 2];
    out += kAlphabet[((a & 0x03) << 4) | (b >> 4)];
    out += two ? kAlphabet[(b & 0x0f) << 2] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> embeddings_as_base64(std::string_view response_body) {
  auto j = nlohmann::json::parse(response_body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array()) {
    return std::nullopt;
  }
  bool changed = false;
  for (auto& item : j["data"]) {
    if (!item.is_object() || !item.contains("embedding") || !item["embedding"].is_array()) {
      continue;
    }
    std::string raw;
    raw.reserve(item["embedding"].size() * 4);
    for (const auto& v : item["embedding"]) {
      float f = v.is_number() ? v.get<float>() : 0.0f;
      char b[4];
      std::memcpy(b, &f, 4);  // x86-64 and arm64 Linux are little-endian
      raw.append(b, 4);
    }
    item["embedding"] = base64_encode(raw);
    changed = true;
  }
  if (!changed) {
    return std::nullopt;
  }
  return j.dump();
}

}  // namespace lemon::api
