// A routing policy's classifiers against the real router and fake
// backends: an llm classifier's label routes (and so does the routing.router
// sugar), one that fails or does not answer in time falls open to the
// default, and a semantic_similarity classifier routes by its reference
// phrases, embedded once.
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "routing_policy_support.h"
#include "support/prometheus_text.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

// An llm classifier asks its model (a fake whose every chat answer is
// `reply`) which candidate should serve.
class RoutingClassifierTest : public RoutingPolicyFixture {
 protected:
  void start_with_judge(const json& judge_knobs) {
    env_.add_llm("a");
    env_.add_llm("b");
    env_.write_sidecar(env_.add_llm("judge"), judge_knobs);
    ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  }
  // user.a by default; user.b when the judge says so.
  void register_judged(int timeout_ms) {
    json routing = {{"candidates", {"user.a", "user.b"}},
                    {"default_model", "user.a"},
                    {"classifiers",
                     {{{"id", "judge"},
                       {"type", "llm"},
                       {"model", "user.judge"},
                       {"prompt", "Pick user.b for hard questions."},
                       {"labels", {"user.a", "user.b"}},
                       {"timeout_ms", timeout_ms},
                       {"on_error", "match_false"}}}},
                    {"rules",
                     {{{"id", "hard"},
                       {"match", {{"classifier", "judge"}, {"label", "user.b"}}},
                       {"route_to", "user.b"}}}}};
    ASSERT_NO_FATAL_FAILURE(
        register_policy(router_policy("user.judged", {"user.a", "user.b", "user.judge"}, routing)));
  }
  std::optional<double> classifier_calls(const std::string& result) {
    std::string problem;
    auto metrics = parse_prom_text(http_get(port(), "/metrics").body, &problem);
    EXPECT_TRUE(metrics) << problem;
    return metrics ? metrics->value(
                         "lemonade_routing_classifier_calls_total",
                         {{"policy", "user.judged"}, {"classifier", "judge"}, {"result", result}})
                   : std::nullopt;
  }
};

TEST_F(RoutingClassifierTest, TheLabelItsModelAnswersRoutes) {
  ASSERT_NO_FATAL_FAILURE(
      start_with_judge({{"reply_text", R"({"model": "user.b", "rationale": "a hard question"})"}}));
  ASSERT_NO_FATAL_FAILURE(register_judged(30000));
  HttpReply r = http_post(port(), "/api/v1/chat/completions",
                          chat_text("user.judged", "prove it", {{"route_trace", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-lemonade-route"), "hard");
  EXPECT_EQ(r.json()["model"], "user.b");
  const json trace = r.json()["x_lemonade_route"]["trace"];
  ASSERT_EQ(trace.size(), 1u) << r.body;
  EXPECT_EQ(trace[0]["condition"], "classifier:judge");
  EXPECT_EQ(trace[0]["score"], 1.0);
  EXPECT_EQ(trace[0]["rationale"], "a hard question");
  EXPECT_EQ(served("user.judge"), 1) << "the judge was asked once";
  EXPECT_EQ(served("user.b"), 1);
  EXPECT_EQ(classifier_calls("ok"), 1.0);

  // The same policy through the router sugar desugars to the same decision.
  json sugar = {{"candidates", {"user.a", "user.b"}},
                {"default_model", "user.a"},
                {"router", {{"type", "llm"}, {"model", "user.judge"}, {"prompt", "Choose."}}}};
  ASSERT_NO_FATAL_FAILURE(
      register_policy(router_policy("user.sugar", {"user.a", "user.b", "user.judge"}, sugar)));
  HttpReply s = http_post(port(), "/api/v1/chat/completions", chat_text("user.sugar", "again"));
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(s.header("x-lemonade-route"), "__route_1");
  EXPECT_EQ(s.json()["model"], "user.b");
  EXPECT_EQ(served("user.judge"), 2);
}

TEST_F(RoutingClassifierTest, AFailingClassifierFallsOpenToTheDefault) {
  ASSERT_NO_FATAL_FAILURE(
      start_with_judge({{"error_status", {{"status", 500}, {"message", "judge broke"}}}}));
  ASSERT_NO_FATAL_FAILURE(register_judged(30000));
  HttpReply r = http_post(port(), "/api/v1/chat/completions",
                          chat_text("user.judged", "prove it", {{"route_trace", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-lemonade-route"), "default");
  EXPECT_EQ(r.json()["model"], "user.a");
  const json decision = r.json()["x_lemonade_route"];
  ASSERT_EQ(decision["classifiers"].size(), 1u) << r.body;
  EXPECT_EQ(decision["classifiers"][0]["ok"], false) << r.body;
  EXPECT_EQ(classifier_calls("failed"), 1.0);
  EXPECT_EQ(loaded_entry(health(port()), "user.b"), std::nullopt);
}

TEST_F(RoutingClassifierTest, AClassifierThatDoesNotAnswerInTimeFallsOpen) {
  ASSERT_NO_FATAL_FAILURE(start_with_judge({{"hang_requests", true}}));
  ASSERT_NO_FATAL_FAILURE(register_judged(400));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.judge"));  // the deadline then covers the call alone
  HttpReply r = http_post(port(), "/api/v1/chat/completions",
                          chat_text("user.judged", "prove it", {{"route_trace", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-lemonade-route"), "default");
  EXPECT_EQ(r.json()["model"], "user.a");
  EXPECT_EQ(r.json()["x_lemonade_route"]["classifiers"][0]["ok"], false) << r.body;
  EXPECT_EQ(classifier_calls("failed"), 1.0);
  // The abandoned call does not hold the judge: its fake saw it cancelled.
  const std::string judge = loaded_field(health(port()), "user.judge", "backend_url");
  EXPECT_TRUE(eventually([&] { return fake_state(judge).value("cancelled", 0) == 1; }));
}

// The fake embedder's vectors are a hash of the text: a request that repeats
// a reference phrase scores 1.0 for its concept, any other text about 0.
TEST_F(RoutingClassifierTest, ASemanticClassifierRoutesByItsPhrasesEmbeddedOnce) {
  env_.add_llm("a");
  env_.add_llm("b");
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  json routing = {
      {"candidates", {"user.a", "user.b"}},
      {"default_model", "user.a"},
      {"classifiers",
       {{{"id", "topic"},
         {"type", "semantic_similarity"},
         {"model", "user.e"},
         {"reference_phrases",
          {{"code", {"write a python script", "fix my build"}}, {"chat", {"how are you"}}}}}}},
      {"rules",
       {{{"id", "coding"},
         {"match", {{"classifier", "topic"}, {"label", "code"}, {"min_score", 0.9}}},
         {"route_to", "user.b"}}}}};
  ASSERT_NO_FATAL_FAILURE(
      register_policy(router_policy("user.sem", {"user.a", "user.b", "user.e"}, routing)));
  HttpReply code = http_post(port(), "/api/v1/chat/completions",
                             chat_text("user.sem", "fix my build", {{"route_trace", true}}));
  ASSERT_EQ(code.status, 200) << code.body;
  EXPECT_EQ(code.header("x-lemonade-route"), "coding");
  EXPECT_EQ(code.json()["model"], "user.b");
  EXPECT_NEAR(code.json()["x_lemonade_route"]["trace"][0]["score"].get<double>(), 1.0, 1e-6)
      << code.body;
  const std::string embedder = loaded_field(health(port()), "user.e", "backend_url");
  EXPECT_EQ(fake_state(embedder)["last_request"]["input"], "fix my build");
  EXPECT_EQ(fake_state(embedder)["requests"], 2) << "the three phrases in a call, then the text";

  HttpReply other =
      http_post(port(), "/api/v1/chat/completions", chat_text("user.sem", "tell me a story"));
  ASSERT_EQ(other.status, 200) << other.body;
  EXPECT_EQ(other.header("x-lemonade-route"), "default");
  EXPECT_EQ(other.json()["model"], "user.a");
  EXPECT_EQ(fake_state(embedder)["last_request"]["input"], "tell me a story");
  EXPECT_EQ(fake_state(embedder)["requests"], 3) << "the phrases' vectors are kept";
}

}  // namespace
}  // namespace lemon::testing
