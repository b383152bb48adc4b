// Routing policies whose classifiers run on real models (a real
// llama-server, LEMON_REAL_LLAMA_SERVER): a semantic_similarity classifier
// on the tiny embedding model and an llm classifier on the tiny chat model.
// Their weights are random, so their scores are noise: these tests check
// the plumbing (the classifier's model is loaded and asked, its answer is
// read, the decision is traced and counted, the request is served by a
// candidate) and the fail-open, not which candidate is chosen.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/test_env.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class RealRoutingTest : public RealLlamaTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(RealLlamaTest::SetUp());
    if (IsSkipped()) {
      return;
    }
    add_tiny_chat("small");
    add_tiny_chat("big");
    env_.add_user_model("embed", {{"checkpoint", real_model_file("tiny-bert-embed.gguf")},
                                  {"recipe", "llamacpp"},
                                  {"labels", {"embeddings"}},
                                  {"source", "local_path"}});
  }

  // Registers `routing` as user.<name> over the three models.
  void register_policy(const std::string& name, const json& routing) {
    HttpReply r = http_post(port(), "/api/v1/pull",
                            json{{"model_name", "user." + name},
                                 {"recipe", "collection.router"},
                                 {"version", "1"},
                                 {"components", {"user.small", "user.big", "user.embed"}},
                                 {"routing", routing}});
    ASSERT_EQ(r.status, 200) << r.body;
  }

  // A routed chat with its trace; returns the answer's x_lemonade_route.
  json routed_chat(const std::string& policy, const std::string& text) {
    HttpReply r = chat(port(), "user." + policy,
                       {{"max_tokens", 4},
                        {"route_trace", true},
                        {"messages", {{{"role", "user"}, {"content", text}}}}});
    EXPECT_EQ(r.status, 200) << r.body;
    const json answer = r.json();
    const json route = answer.value("x_lemonade_route", json());
    EXPECT_TRUE(route.is_object()) << r.body;
    EXPECT_EQ(r.header("x-lemonade-route"), route.value("matched_rule", "") == ""
                                                ? std::string("default")
                                                : route.value("matched_rule", ""))
        << r.body;
    // The candidate it chose was loaded to serve the request.
    EXPECT_TRUE(loaded_entry(health(port()), route.value("route_to", "")).has_value()) << r.body;
    return route;
  }
};

TEST_F(RealRoutingTest, ASemanticSimilarityClassifierEmbedsOnTheRealModel) {
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  ASSERT_NO_FATAL_FAILURE(register_policy(
      "topic", {{"candidates", {"user.small", "user.big"}},
                {"default_model", "user.small"},
                {"classifiers",
                 {{{"id", "kind"},
                   {"type", "semantic_similarity"},
                   {"model", "user.embed"},
                   {"reference_phrases",
                    {{"code", {"fix this stack trace", "write a python function"}},
                     {"chat", {"how are you today", "tell me a joke"}}}}}}},
                {"rules",
                 {{{"id", "code"},
                   {"match", {{"classifier", "kind"}, {"label", "code"}, {"min_score", 0.0}}},
                   {"route_to", "user.big"}}}}}));
  const json route = routed_chat("topic", "my program crashes with a segfault");
  ASSERT_TRUE(route.contains("classifiers")) << route.dump();
  const json run = route["classifiers"][0];
  EXPECT_EQ(run.value("id", ""), "kind") << route.dump();
  EXPECT_EQ(run.value("ok", false), true) << route.dump();
  // Every concept scored, within [0, 1] (cosine similarity, clamped).
  ASSERT_TRUE(run["scores"].is_object()) << route.dump();
  for (const char* label : {"code", "chat"}) {
    ASSERT_TRUE(run["scores"].contains(label)) << route.dump();
    const double score = run["scores"][label].get<double>();
    EXPECT_GE(score, 0.0);
    EXPECT_LE(score, 1.0);
  }
  // min_score 0 takes any score: the band matched and its rule routed.
  EXPECT_EQ(route.value("matched_rule", ""), "code") << route.dump();
  EXPECT_TRUE(loaded_entry(health(port()), "user.embed").has_value())
      << "the classifier's model was loaded to answer";
  const json stats = http_get(port(), "/api/v1/stats").json();
  EXPECT_EQ(stats.value("routing_decisions_total", 0), 1) << stats.dump();
}

TEST_F(RealRoutingTest, AnLlmClassifierIsAskedAndItsAnswerReadOrFailsOpen) {
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  ASSERT_NO_FATAL_FAILURE(
      register_policy("judge", {{"candidates", {"user.small", "user.big"}},
                                {"default_model", "user.small"},
                                {"classifiers",
                                 {{{"id", "hard"},
                                   {"type", "llm"},
                                   {"model", "user.small"},
                                   {"prompt", "Say which model should answer."},
                                   {"labels", {"user.small", "user.big"}},
                                   {"max_tokens", 16},
                                   {"timeout_ms", 60000}}}},
                                {"rules",
                                 {{{"id", "big"},
                                   {"match", {{"classifier", "hard"}, {"label", "user.big"}}},
                                   {"route_to", "user.big"}}}}}));
  const json route = routed_chat("judge", "prove that there are infinitely many primes");
  ASSERT_TRUE(route.contains("classifiers")) << route.dump();
  const json run = route["classifiers"][0];
  EXPECT_EQ(run.value("id", ""), "hard") << route.dump();
  // The random model's reply is almost surely not the label contract: the
  // call is ok with no scores and the band fails open to the default. If it
  // did name a label, that label scored 1 and its rule decides.
  EXPECT_EQ(run.value("ok", false), true) << route.dump();
  const std::set<std::string> candidates{"user.small", "user.big"};
  EXPECT_TRUE(candidates.count(route.value("route_to", ""))) << route.dump();
  if (run["scores"].empty()) {
    EXPECT_TRUE(route.value("default_used", false)) << route.dump();
    EXPECT_EQ(route.value("route_to", ""), "user.small") << route.dump();
  }
}

TEST_F(RealRoutingTest, AClassifierWhoseModelCannotAnswerCountsAsItsOnError) {
  // An embedding model whose file is no GGUF: the real llama-server cannot
  // load it, so the classifier fails, and on_error decides: match_true
  // routes to big, match_false falls open to small.
  const std::string broken = env_.models_dir() + "/broken-embed.gguf";
  {
    std::ofstream out(broken);
    out << "this is not a GGUF file\n";
  }
  env_.add_user_model("broken", {{"checkpoint", broken},
                                 {"recipe", "llamacpp"},
                                 {"labels", {"embeddings"}},
                                 {"source", "local_path"}});
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  for (const std::string on_error : {"match_true", "match_false"}) {
    const std::string name = "broken-" + on_error;
    HttpReply registered =
        http_post(port(), "/api/v1/pull",
                  json{{"model_name", "user." + name},
                       {"recipe", "collection.router"},
                       {"version", "1"},
                       {"components", {"user.small", "user.big", "user.broken"}},
                       {"routing",
                        {{"candidates", {"user.small", "user.big"}},
                         {"default_model", "user.small"},
                         {"classifiers",
                          {{{"id", "topic"},
                            {"type", "semantic_similarity"},
                            {"model", "user.broken"},
                            {"reference_phrases", {{"code", {"write a function"}}}},
                            {"on_error", on_error}}}},
                         {"rules",
                          {{{"id", "code"},
                            {"match", {{"classifier", "topic"}, {"label", "code"}}},
                            {"route_to", "user.big"}}}}}}});
    ASSERT_EQ(registered.status, 200) << registered.body;
    const json route = routed_chat(name, "write a function that adds two numbers");
    ASSERT_TRUE(route.contains("classifiers")) << route.dump();
    EXPECT_EQ(route["classifiers"][0].value("ok", true), false) << route.dump();
    EXPECT_EQ(route.value("route_to", ""), on_error == "match_true" ? "user.big" : "user.small")
        << route.dump();
  }
}

}  // namespace
}  // namespace lemon::testing
