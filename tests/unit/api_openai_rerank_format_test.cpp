// Rerank results go back to the client in input order, whatever order the
// backend ranked them in.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lemon/api/openai/rerank_format.h"

namespace lemon::api {
namespace {

TEST(RerankFormat, ResultsAreSortedByIndex) {
  auto out = rerank_in_input_order(
      R"({"object":"list","results":[{"index":2,"relevance_score":0.9},{"index":0,"relevance_score":0.5},{"index":1,"relevance_score":0.1}]})");
  ASSERT_TRUE(out);
  auto j = nlohmann::json::parse(*out);
  ASSERT_EQ(j["results"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["results"][i]["index"], i);
  }
  EXPECT_EQ(j["results"][0]["relevance_score"], 0.5);
  EXPECT_FALSE(rerank_in_input_order(R"({"results":[{"index":0},{"index":1}]})"));
  EXPECT_FALSE(rerank_in_input_order("not json"));
}

}  // namespace
}  // namespace lemon::api
