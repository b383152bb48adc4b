#include "lemon/models/sampling_rule.h"

#include <cmath>

namespace lemon {
namespace {

constexpr SamplingRule kRules[] = {
    {"temperature", false, 0.0, 100.0, true},
    {"top_p", false, 0.0, 1.0, true},
    {"top_k", true, 0.0, 1e9, true},
    {"min_p", false, 0.0, 1.0, true},
    {"repeat_penalty", false, 0.0, 100.0, true},
    {"presence_penalty", false, -2.0, 2.0, false},
    {"frequency_penalty", false, -2.0, 2.0, false},
    {"max_tokens", true, 1.0, 1e9, false},
    {"seed", true, -1e18, 1e18, false},
};

// "0.5", "100", "-1e+18": the bound as a reader expects it.
std::string bound_text(double v) {
  nlohmann::json j = v;
  if (std::floor(v) == v && std::fabs(v) < 1e15) {
    j = static_cast<long long>(v);
  }
  return j.dump();
}

}  // namespace

const SamplingRule* find_sampling_rule(std::string_view key) {
  for (const auto& rule : kRules) {
    if (key == rule.key) {
      return &rule;
    }
  }
  return nullptr;
}

std::optional<std::string> sampling_value_problem(const SamplingRule& rule,
                                                  const nlohmann::json& value) {
  if (!value.is_number() || (rule.integer && !value.is_number_integer())) {
    return rule.integer ? "must be an integer" : "must be a number";
  }
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < rule.min || v > rule.max) {
    return "is out of range (" + bound_text(rule.min) + " to " + bound_text(rule.max) + ")";
  }
  return std::nullopt;
}

}  // namespace lemon
