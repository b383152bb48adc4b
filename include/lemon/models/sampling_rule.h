// The request fields that set sampling, and the values each takes: one table
// for presets' sampling defaults (models/preset) and the /params generation
// defaults (http/generation_defaults).
//
// Thread-safety: constant data and pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lemon {

struct SamplingRule {
  const char* key;
  bool integer;
  double min;
  double max;
  bool in_presets;  // a preset's "sampling" may set it
};

// The rule for `key`, or null when `key` is not a sampling field.
const SamplingRule* find_sampling_rule(std::string_view key);

// Why `value` does not suit `rule` ("must be an integer", "must be a number",
// "is out of range (MIN to MAX)"), or nullopt when it does.
std::optional<std::string> sampling_value_problem(const SamplingRule& rule,
                                                  const nlohmann::json& value);

}  // namespace lemon
