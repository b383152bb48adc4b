// SlotLimits: how many servers of each ModelType may be loaded at once
// (--max-loaded-models). -1 means unlimited.
//
// Accepted forms: one value N for every type, or the list form
// "LLM [EMBEDDING [RERANKING [AUDIO [IMAGE]]]]" with missing entries padded
// with 1. Each value must be -1 or >= 1.
//
// Thread-safety: value type.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/core/model_types.h"

namespace lemon {

class SlotLimits {
 public:
  static constexpr int kUnlimited = -1;

  SlotLimits() { per_type_.fill(1); }
  static SlotLimits uniform(int n);

  // From 1 to 5 values; kInvalidOption (param "max_loaded_models") otherwise.
  static Result<SlotLimits> from_values(const std::vector<int>& values);
  // From text such as "3", "-1" or "2 1 1" (spaces or commas).
  static Result<SlotLimits> parse(std::string_view text);

  int limit(ModelType type) const { return per_type_[static_cast<std::size_t>(type)]; }
  bool unlimited(ModelType type) const { return limit(type) == kUnlimited; }

 private:
  std::array<int, kModelTypeCount> per_type_{};
};

}  // namespace lemon
