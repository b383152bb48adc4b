// Reranking results in input order. Backends differ (recent llama-server
// sorts by score); Lemonade documents input order, so the router sorts the
// `results` array by `index` before answering.
//
// Thread-safety: pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lemon::api {

// The response with `results` sorted by `index`, or nullopt when it already
// is (or the body is not a reranking result).
std::optional<std::string> rerank_in_input_order(std::string_view response_body);

}  // namespace lemon::api
