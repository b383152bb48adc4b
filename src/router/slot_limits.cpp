#include "lemon/router/slot_limits.h"

#include <charconv>

namespace lemon {

SlotLimits SlotLimits::uniform(int n) {
  SlotLimits l;
  l.per_type_.fill(n);
  return l;
}

Result<SlotLimits> SlotLimits::from_values(const std::vector<int>& values) {
  if (values.empty() || values.size() > kModelTypeCount) {
    return Error(ErrorCode::kInvalidOption,
                 "--max-loaded-models takes 1 to 5 values (LLM [EMBEDDING [RERANKING [AUDIO "
                 "[IMAGE]]]])",
                 "max_loaded_models");
  }
  for (int v : values) {
    if (v != kUnlimited && v < 1) {
      return Error(ErrorCode::kInvalidOption,
                   "--max-loaded-models values must be -1 (unlimited) or at least 1, got " +
                       std::to_string(v),
                   "max_loaded_models");
    }
  }
  if (values.size() == 1) {
    return uniform(values[0]);
  }
  SlotLimits l;  // missing entries stay 1
  for (std::size_t i = 0; i < values.size(); ++i) {
    l.per_type_[i] = values[i];
  }
  return l;
}

Result<SlotLimits> SlotLimits::parse(std::string_view text) {
  std::vector<int> values;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ' || text[i] == ',' || text[i] == '\t') {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && text[end] != ' ' && text[end] != ',' && text[end] != '\t') {
      ++end;
    }
    std::string_view word = text.substr(i, end - i);
    int v = 0;
    auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || ptr != word.data() + word.size()) {
      return Error(ErrorCode::kInvalidOption,
                   "--max-loaded-models: '" + std::string(word) + "' is not an integer",
                   "max_loaded_models");
    }
    values.push_back(v);
    i = end;
  }
  return from_values(values);
}

}  // namespace lemon
