// The one table of sampling fields that presets and /params validate with.
#include "lemon/models/sampling_rule.h"

#include <gtest/gtest.h>

namespace lemon {
namespace {

TEST(SamplingRule, PresetsTakeTheSamplingFieldsAndParamsTakeMore) {
  for (const char* key : {"temperature", "top_p", "top_k", "min_p", "repeat_penalty"}) {
    const SamplingRule* rule = find_sampling_rule(key);
    ASSERT_NE(rule, nullptr) << key;
    EXPECT_TRUE(rule->in_presets) << key;
  }
  for (const char* key : {"presence_penalty", "frequency_penalty", "max_tokens", "seed"}) {
    const SamplingRule* rule = find_sampling_rule(key);
    ASSERT_NE(rule, nullptr) << key;
    EXPECT_FALSE(rule->in_presets) << key;
  }
  EXPECT_EQ(find_sampling_rule("temprature"), nullptr);
}

TEST(SamplingRule, ProblemsNameTheTypeOrTheRange) {
  const SamplingRule& top_p = *find_sampling_rule("top_p");
  EXPECT_EQ(sampling_value_problem(top_p, 0.5), std::nullopt);
  EXPECT_EQ(sampling_value_problem(top_p, 1), std::nullopt);
  EXPECT_EQ(sampling_value_problem(top_p, 1.5), "is out of range (0 to 1)");
  EXPECT_EQ(sampling_value_problem(top_p, "0.5"), "must be a number");
  const SamplingRule& top_k = *find_sampling_rule("top_k");
  EXPECT_EQ(sampling_value_problem(top_k, 2.5), "must be an integer");
  EXPECT_EQ(sampling_value_problem(top_k, -1), "is out of range (0 to 1000000000)");
  const SamplingRule& presence = *find_sampling_rule("presence_penalty");
  EXPECT_EQ(sampling_value_problem(presence, -2.5), "is out of range (-2 to 2)");
}

}  // namespace
}  // namespace lemon
