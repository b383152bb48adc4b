// The token figures a backend reports (backend_usage.h): from a parsed event
// (stats_from_backend_json) and from a whole answer's text, read without a
// DOM (stats_from_answer). The second must agree with the first on the
// answer's last `timings` and `usage` objects, whatever those hold.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "lemon/inference/backend_usage.h"

namespace lemon::inference {
namespace {

using nlohmann::json;

RequestStats from_answer(const std::string& body) {
  RequestStats s;
  stats_from_answer(body, s);
  return s;
}

RequestStats from_json(const json& j) {
  RequestStats s;
  stats_from_backend_json(j, s);
  return s;
}

void expect_same(const RequestStats& a, const RequestStats& b, const std::string& what) {
  EXPECT_EQ(a.input_tokens, b.input_tokens) << what;
  EXPECT_EQ(a.output_tokens, b.output_tokens) << what;
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens) << what;
  EXPECT_DOUBLE_EQ(a.time_to_first_token, b.time_to_first_token) << what;
  EXPECT_DOUBLE_EQ(a.tokens_per_second, b.tokens_per_second) << what;
  EXPECT_EQ(a.draft_tokens, b.draft_tokens) << what;
  EXPECT_EQ(a.draft_accepted_tokens, b.draft_accepted_tokens) << what;
}

TEST(BackendUsageTest, DraftFiguresComeFromTimingsOnlyWhenItDrafted) {
  // llama-server adds draft_n and draft_n_accepted only when it drafted.
  const std::string drafted =
      R"({"choices":[],"timings":{"prompt_n":4,"prompt_ms":1.0,"predicted_n":32,)"
      R"("predicted_per_second":50.0,"draft_n":30,"draft_n_accepted":21}})";
  RequestStats s = from_answer(drafted);
  EXPECT_EQ(s.draft_tokens, 30);
  EXPECT_EQ(s.draft_accepted_tokens, 21);
  ASSERT_TRUE(s.draft_acceptance_rate());
  EXPECT_DOUBLE_EQ(*s.draft_acceptance_rate(), 0.7);
  expect_same(s, from_json(json::parse(drafted)), "drafted");
  EXPECT_EQ(s.to_json()["draft_acceptance_rate"], 0.7);

  const RequestStats plain = from_answer(R"({"timings":{"prompt_n":4,"predicted_n":3}})");
  EXPECT_EQ(plain.draft_tokens, 0);
  EXPECT_FALSE(plain.draft_acceptance_rate());
  EXPECT_TRUE(plain.to_json()["draft_acceptance_rate"].is_null());
}

TEST(BackendUsageTest, ALlamaCppAnswerGivesItsTimings) {
  // As llama-server answers a non-streaming chat (fields in its order).
  const std::string body =
      R"({"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant",)"
      R"("content":"The"}}],"created":1795806351,"model":"m","object":"chat.completion",)"
      R"("usage":{"completion_tokens":1,"prompt_tokens":41,"total_tokens":42},)"
      R"("timings":{"cache_n":0,"prompt_n":41,"prompt_ms":10.25,"prompt_per_token_ms":0.25,)"
      R"("prompt_per_second":4000.0,"predicted_n":1,"predicted_ms":10.0,)"
      R"("predicted_per_token_ms":10.0,"predicted_per_second":100.0}})";
  RequestStats s = from_answer(body);
  EXPECT_EQ(s.input_tokens, 41);
  EXPECT_EQ(s.prompt_tokens, 41);
  EXPECT_EQ(s.output_tokens, 1);
  EXPECT_DOUBLE_EQ(s.time_to_first_token, 0.01025);
  EXPECT_DOUBLE_EQ(s.tokens_per_second, 100.0);
}

TEST(BackendUsageTest, UsageNamesOfEachApiFillWhatTimingsLeftUnset) {
  RequestStats openai = from_answer(R"({"usage":{"prompt_tokens":7,"completion_tokens":3}})");
  EXPECT_EQ(openai.input_tokens, 7);
  EXPECT_EQ(openai.prompt_tokens, 7);
  EXPECT_EQ(openai.output_tokens, 3);

  RequestStats responses = from_answer(R"({"usage":{"input_tokens":9,"output_tokens":4}})");
  EXPECT_EQ(responses.input_tokens, 9);
  EXPECT_EQ(responses.prompt_tokens, 9);
  EXPECT_EQ(responses.output_tokens, 4);

  RequestStats flm = from_answer(
      R"({"usage":{"prompt_tokens":5,"completion_tokens":2,"prefill_duration_ttft":0.5,)"
      R"("decoding_speed_tps":31.5}})");
  EXPECT_DOUBLE_EQ(flm.time_to_first_token, 0.5);
  EXPECT_DOUBLE_EQ(flm.tokens_per_second, 31.5);

  // llama.cpp's timings come first: usage does not overwrite them.
  RequestStats both = from_answer(
      R"({"usage":{"completion_tokens":99},"timings":{"predicted_n":6,"prompt_ms":0}})");
  EXPECT_EQ(both.output_tokens, 6);
  EXPECT_DOUBLE_EQ(both.time_to_first_token, 0.0);  // a zero prompt time is no figure
}

TEST(BackendUsageTest, AnAnswerWithoutFiguresLeavesTheStatsUntouched) {
  RequestStats s;
  s.output_tokens = 12;
  s.tokens_per_second = 3.0;
  stats_from_answer(R"({"choices":[{"message":{"content":"hi"}}]})", s);
  stats_from_answer("", s);
  stats_from_answer("not json", s);
  EXPECT_EQ(s.output_tokens, 12);
  EXPECT_DOUBLE_EQ(s.tokens_per_second, 3.0);
  EXPECT_EQ(s.input_tokens, 0);
}

TEST(BackendUsageTest, AnAnswersTextAgreesWithTheParsedObjects) {
  // Each case: the `timings` and `usage` values (raw JSON text, empty for
  // none) put at the end of an answer.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prompt_n":3,"predicted_n":2,"prompt_ms":1.5,"predicted_per_second":8})", ""},
      {"", R"({"prompt_tokens":3,"input_tokens":4,"output_tokens":5})"},
      {R"({"predicted_n":2})", R"({"completion_tokens":9,"decoding_speed_tps":4.25})"},
      // Not numbers: strings, null, booleans, nested values.
      {R"({"prompt_n":"3","predicted_n":null,"prompt_ms":true,"predicted_per_second":[1]})",
       R"({"prompt_tokens":{"n":3},"completion_tokens":false})"},
      // Nested objects that use the same names count for nothing.
      {R"({"detail":{"prompt_n":50,"predicted_n":[60]},"predicted_n":4})",
       R"({"prompt_tokens_details":{"cached_tokens":2,"prompt_tokens":70},"prompt_tokens":8})"},
      // A name given twice: its last value, number or not.
      {R"({"predicted_n":1,"predicted_n":2,"prompt_n":5,"prompt_n":"x"})",
       R"({"completion_tokens":3,"completion_tokens":4})"},
      // Negative, fractional, exponent and huge numbers.
      {R"({"prompt_n":-4,"predicted_n":2.9,"prompt_ms":1e3,"predicted_per_second":1e300})",
       R"({"prompt_tokens":18446744073709551615,"completion_tokens":-9223372036854775808})"},
      // Text with braces and quotes inside strings.
      {R"({"note":"a } and a \" and a {","predicted_n":7})", R"({"s":"}{","prompt_tokens":2})"},
      // Empty objects.
      {"{}", "{}"},
  };
  for (const auto& [timings, usage] : cases) {
    std::string body = R"({"choices":[{"message":{"content":"x"}}])";
    json parsed = json::object();
    if (!timings.empty()) {
      body += R"(,"timings":)" + timings;
      parsed["timings"] = json::parse(timings);
    }
    if (!usage.empty()) {
      body += R"(,"usage":)" + usage;
      parsed["usage"] = json::parse(usage);
    }
    body += "}";
    expect_same(from_answer(body), from_json(parsed), body);
  }
}

TEST(BackendUsageTest, HugeCountsAreClampedNotWrapped) {
  RequestStats s = from_answer(R"({"timings":{"prompt_n":1e30,"predicted_n":-1e30}})");
  EXPECT_EQ(s.input_tokens, INT_MAX);
  EXPECT_EQ(s.output_tokens, INT_MIN);
}

TEST(BackendUsageTest, AMalformedObjectCountsAsAbsent) {
  // The usage object is cut short; the timings before it still count.
  RequestStats s = from_answer(
      R"({"timings":{"predicted_n":3},"usage":{"completion_tokens":5,"prompt_tokens":})");
  EXPECT_EQ(s.output_tokens, 3);
  EXPECT_EQ(s.prompt_tokens, 0);
  // So is one with a number beyond a double (nlohmann refuses it).
  RequestStats overflow = from_answer(R"({"usage":{"prompt_tokens":4,"completion_tokens":1e400}})");
  EXPECT_EQ(overflow.prompt_tokens, 0);
  EXPECT_EQ(overflow.output_tokens, 0);
}

TEST(BackendUsageTest, OnlyTheObjectIsReadNotWhatFollowsIt) {
  // Whatever follows the last usage object (here a cut-off answer) is not
  // part of it.
  RequestStats cut = from_answer(R"({"usage":{"prompt_tokens":2,"completion_tokens":3},"x":@@)");
  EXPECT_EQ(cut.prompt_tokens, 2);
  EXPECT_EQ(cut.output_tokens, 3);
  // A value that is not an object holds no figures.
  RequestStats array = from_answer(R"({"timings":[{"predicted_n":4}],"usage":[5,6]})");
  EXPECT_EQ(array.output_tokens, 0);
  EXPECT_EQ(array.prompt_tokens, 0);
}

TEST(BackendUsageTest, AResponsesEventNestsItsUsage) {
  json event = {{"type", "response.completed"},
                {"response", {{"usage", {{"input_tokens", 11}, {"output_tokens", 6}}}}}};
  RequestStats s = from_json(event);
  EXPECT_EQ(s.input_tokens, 11);
  EXPECT_EQ(s.prompt_tokens, 11);
  EXPECT_EQ(s.output_tokens, 6);
}

}  // namespace
}  // namespace lemon::inference
