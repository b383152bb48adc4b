#include "lemon/api/openai/embedding_format.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "lemon/net/base64.h"

namespace lemon::api {

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
    item["embedding"] = net::base64_encode(raw);
    changed = true;
  }
  if (!changed) {
    return std::nullopt;
  }
  return j.dump();
}

}  // namespace lemon::api
