#include "lemon/api/openai/rerank_format.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace lemon::api {

std::optional<std::string> rerank_in_input_order(std::string_view response_body) {
  auto j = nlohmann::json::parse(response_body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("results") || !j["results"].is_array()) {
    return std::nullopt;
  }
  auto& results = j["results"];
  auto index_of = [](const nlohmann::json& r) {
    return r.is_object() && r.contains("index") && r["index"].is_number_integer()
               ? r["index"].get<long long>()
               : -1;
  };
  auto by_index = [&](const nlohmann::json& a, const nlohmann::json& b) {
    return index_of(a) < index_of(b);
  };
  if (std::is_sorted(results.begin(), results.end(), by_index)) {
    return std::nullopt;
  }
  std::stable_sort(results.begin(), results.end(), by_index);
  return j.dump();
}

}  // namespace lemon::api
