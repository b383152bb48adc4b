// The routing decision without a server (routing/route_engine.h): Lemonade's
// documented examples (docs/dev/router-policy.md), every operator, empty
// input, classifiers with their bands, memo, failures and on_error, the
// router sugar, and ours: the state leaves, routing.state's gates and
// preferences.
#include <pthread.h>

#include <gtest/gtest.h>

#include "lemon/routing/route_engine.h"

namespace lemon::routing {
namespace {

using nlohmann::json;

// Classifier answers from a table, counting the calls.
class TableClassifiers final : public ClassifierSource {
 public:
  std::map<std::string, ClassifierResult> answers;
  std::map<std::string, int> calls;
  std::string last_text;

  ClassifierResult classify(const Classifier& c, const RouteInput& input) override {
    ++calls[c.id];
    last_text = input.text;
    auto it = answers.find(c.id);
    if (it == answers.end()) {
      ClassifierResult failed;
      failed.error = "no answer";
      return failed;
    }
    return it->second;
  }
  void answer(const std::string& id, std::map<std::string, double> scores,
              std::string rationale = {}) {
    ClassifierResult r;
    r.ok = true;
    r.scores = std::move(scores);
    r.rationale = std::move(rationale);
    answers[id] = r;
  }
};

std::shared_ptr<const RoutePolicy> policy_of(json routing,
                                             json components = {"small", "big", "helper"}) {
  json doc = {{"version", "1"},
              {"recipe", "collection.router"},
              {"components", std::move(components)},
              {"routing", std::move(routing)}};
  auto parsed = parse_route_policy(doc);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message();
  return parsed.ok() ? *parsed : nullptr;
}

RouteInput text(std::string t) {
  RouteInput in;
  in.text = std::move(t);
  return in;
}

json rules_routing(json rules, json extra = json::object()) {
  json r = {{"candidates", {"small", "big"}}, {"default_model", "small"}, {"rules", rules}};
  r.update(extra);
  return r;
}

Decision decide_text(const RoutePolicy& p, const std::string& t, ClassifierSource* c = nullptr,
                     const RouterState& state = {}) {
  return decide(p, text(t), state, c, true);
}

// A connection thread's stack (net::ServerOptions: 512 KiB): a regex search
// over a prompt just under the 1 MiB cap runs there without overflowing it.
TEST(RoutingEngine, ARegexSearchOfALongPromptFitsAConnectionThreadsStack) {
  auto p = policy_of(rules_routing(
      json::array({{{"id", "trace"}, {"match", {{"regex", "error.*line"}}}, {"route_to", "big"}},
                   {{"id", "def"}, {"match", {{"regex", "def \\w+\\("}}}, {"route_to", "big"}}})));
  ASSERT_TRUE(p);
  const std::string long_match = "error " + std::string(kMaxRegexInput - 16, 'x') + " line";
  const std::string long_def = "def " + std::string(kMaxRegexInput - 16, 'a') + "(";
  std::string first;
  std::string second;
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 512 * 1024), 0);
  struct Work {
    const RoutePolicy* policy;
    const std::string* inputs[2];
    std::string* outputs[2];
  } work{p.get(), {&long_match, &long_def}, {&first, &second}};
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* arg) -> void* {
                  auto* w = static_cast<Work*>(arg);
                  for (int i = 0; i < 2; ++i) {
                    *w->outputs[i] =
                        decide(*w->policy, text(*w->inputs[i]), {}, nullptr, false).matched_rule;
                  }
                  return nullptr;
                },
                &work),
            0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  EXPECT_EQ(first, "trace");
  EXPECT_EQ(second, "def");
}

TEST(RoutingEngine, TheDocumentedExampleRoutesBySensitivityThenCodeOrLength) {
  // docs/dev/router-policy.md's first example, with its names.
  json doc = json::parse(R"({
    "version": "1", "model_name": "user.My-Router", "recipe": "collection.router",
    "components": ["Small-GGUF", "Big-GGUF"],
    "routing": {"candidates": ["Small-GGUF", "Big-GGUF"], "default_model": "Small-GGUF",
      "rules": [
        {"id": "sensitive-stays-local",
         "match": {"metadata": {"key": "consent", "equals": "denied"}},
         "route_to": "Small-GGUF", "outputs": {"reason": "privacy"}},
        {"id": "coding-or-long-to-big",
         "match": {"any": [{"keywords_any": ["def ", "function", "stack trace"]},
                           {"min_chars": 4000}]},
         "route_to": "Big-GGUF"}]}})");
  auto p = parse_route_policy(doc);
  ASSERT_TRUE(p.ok()) << p.error().message();
  RouteInput code = text("def fib(n): here is my stack trace");
  code.metadata["consent"] = "denied";
  Decision d = decide(**p, code, {}, nullptr, false);
  EXPECT_EQ(d.route_to, "Small-GGUF");
  EXPECT_EQ(d.matched_rule, "sensitive-stays-local");
  EXPECT_EQ(d.outputs, json({{"reason", "privacy"}}));
  code.metadata.clear();
  d = decide(**p, code, {}, nullptr, false);
  EXPECT_EQ(d.route_to, "Big-GGUF");
  EXPECT_EQ(route_header(d), "coding-or-long-to-big");
  d = decide(**p, text(std::string(4000, 'x')), {}, nullptr, false);
  EXPECT_EQ(d.matched_rule, "coding-or-long-to-big");
  d = decide(**p, text(std::string(3999, 'x')), {}, nullptr, false);
  EXPECT_TRUE(d.default_used);
  EXPECT_EQ(d.route_to, "Small-GGUF");
  EXPECT_EQ(route_header(d), "default");
  EXPECT_TRUE(d.trace.empty()) << "no trace unless asked";
}

TEST(RoutingEngine, EmptyInputMatchesOnlyWhatEmptinessSatisfies) {
  auto p = policy_of(rules_routing(json::array({
      {{"id", "kw"}, {"match", {{"keywords_any", {"a"}}}}, {"route_to", "big"}},
      {{"id", "re"}, {"match", {{"regex", "."}}}, {"route_to", "big"}},
      {{"id", "short"}, {"match", {{"max_chars", 0}}}, {"route_to", "big"}},
  })));
  Decision d = decide(*p, RouteInput{}, {}, nullptr, true);
  EXPECT_EQ(d.matched_rule, "short");
  ASSERT_EQ(d.trace.size(), 3u);
  EXPECT_FALSE(d.trace[0].result);
  EXPECT_FALSE(d.trace[1].result);
  EXPECT_TRUE(d.trace[2].result);
  // A body without messages, prompt or input routes on "".
  EXPECT_EQ(route_input_from_body(json::object()).text, "");
  EXPECT_EQ(route_input_from_body({{"messages", json::array()}}).text, "");
}

TEST(RoutingEngine, EveryDeterministicOperator) {
  auto p = policy_of(rules_routing(json::array({
      {{"id", "all-kw"}, {"match", {{"keywords_all", {"alpha", "beta"}}}}, {"route_to", "big"}},
      {{"id", "tools"}, {"match", {{"has_tools", true}}}, {"route_to", "big"}},
      {{"id", "images"}, {"match", {{"has_images", true}}}, {"route_to", "big"}},
      {{"id", "re"}, {"match", {{"regex", "[0-9]{3}-[0-9]{4}"}}}, {"route_to", "big"}},
      {{"id", "meta-any"},
       {"match", {{"metadata", {{"key", "tier"}, {"any", {"gold", "platinum"}}}}}},
       {"route_to", "big"}},
      {{"id", "meta-exists-not"},
       {"match",
        {{"all",
          {{{"metadata", {{"key", "user"}, {"exists", false}}}},
           {{"not", {{"keywords_any", {"hello"}}}}}}}}},
       {"route_to", "big"}},
  })));
  EXPECT_EQ(decide_text(*p, "ALPHA and Beta").matched_rule, "all-kw");
  RouteInput tools = text("x");
  tools.has_tools = true;
  tools.metadata["user"] = "u";
  EXPECT_EQ(decide(*p, tools, {}, nullptr, false).matched_rule, "tools");
  RouteInput images = text("x");
  images.has_images = true;
  images.metadata["user"] = "u";
  EXPECT_EQ(decide(*p, images, {}, nullptr, false).matched_rule, "images");
  EXPECT_EQ(decide_text(*p, "call 555-1234 now").matched_rule, "re");
  RouteInput tier = text("hello");
  tier.metadata["tier"] = " silver , gold ";
  EXPECT_EQ(decide(*p, tier, {}, nullptr, false).matched_rule, "meta-any");
  tier.metadata["tier"] = "Gold";  // tokens compare case-sensitively
  tier.metadata["user"] = "   ";   // blank counts as absent
  EXPECT_TRUE(decide(*p, tier, {}, nullptr, false).default_used);
  EXPECT_EQ(decide_text(*p, "anything").matched_rule, "meta-exists-not");
}

TEST(RoutingEngine, RegexIsNotSearchedInAnInputOverOneMebibyte) {
  auto p = policy_of(rules_routing(
      json::array({{{"id", "re"}, {"match", {{"regex", "x"}}}, {"route_to", "big"}}})));
  EXPECT_EQ(decide_text(*p, std::string(kMaxRegexInput, 'x')).matched_rule, "re");
  EXPECT_TRUE(decide_text(*p, std::string(kMaxRegexInput + 1, 'x')).default_used);
}

TEST(RoutingEngine, ABandUsesTheLabelDefaultLabelOrSingleScoreAndIsInclusive) {
  auto p = policy_of(rules_routing(
      json::array({
          {{"id", "explicit"},
           {"match", {{"classifier", "topic"}, {"label", "code"}, {"min_score", 0.6}}},
           {"route_to", "big"}},
          {{"id", "default-label"},
           {"match", {{"classifier", "risk"}, {"max_score", 0.2}}},
           {"route_to", "big"}},
      }),
      {{"classifiers",
        {{{"id", "topic"},
          {"type", "semantic_similarity"},
          {"model", "helper"},
          {"reference_phrases", {{"code", {"write a function"}}, {"chat", {"hello"}}}}},
         {{"id", "risk"},
          {"type", "llm"},
          {"model", "helper"},
          {"prompt", "Rate the risk."},
          {"labels", {"SAFE", "RISKY"}},
          {"default_label", "SAFE"}}}}}));
  TableClassifiers c;
  c.answer("topic", {{"code", 0.6}, {"chat", 0.9}});
  Decision d = decide_text(*p, "write code", &c);
  EXPECT_EQ(d.matched_rule, "explicit") << "0.6 is inside [0.6, 1]";
  ASSERT_EQ(d.trace.size(), 1u);
  EXPECT_EQ(d.trace[0].condition, "classifier:topic");
  EXPECT_EQ(d.trace[0].label, "code");
  EXPECT_DOUBLE_EQ(*d.trace[0].score, 0.6);

  c.answer("topic", {{"code", 0.59}});
  c.answer("risk", {{"RISKY", 1.0}}, "looks risky");  // SAFE is absent: it scores 0
  d = decide_text(*p, "write code", &c);
  EXPECT_EQ(d.matched_rule, "default-label");
  ASSERT_EQ(d.trace.size(), 2u);
  EXPECT_EQ(d.trace[1].label, "") << "a default label is not shown";
  EXPECT_DOUBLE_EQ(*d.trace[1].score, 0.0);
  EXPECT_EQ(d.trace[1].rationale, "") << "the rationale goes with the label it chose";
  EXPECT_EQ(c.last_text, "write code");
}

TEST(RoutingEngine, AClassifierRunsOnceAndOnlyWhenABandIsReached) {
  auto p = policy_of(rules_routing(
      json::array({
          {{"id", "cheap-first"}, {"match", {{"keywords_any", {"urgent"}}}}, {"route_to", "big"}},
          {{"id", "a"},
           {"match", {{"classifier", "k"}, {"label", "x"}, {"min_score", 0.9}}},
           {"route_to", "big"}},
          {{"id", "b"},
           {"match", {{"classifier", "k"}, {"label", "y"}, {"min_score", 0.9}}},
           {"route_to", "big"}},
      }),
      {{"classifiers",
        {{{"id", "k"}, {"type", "classifier"}, {"model", "helper"}, {"labels", {"x", "y"}}}}}}));
  TableClassifiers c;
  c.answer("k", {{"x", 0.1}, {"y", 0.1}});
  EXPECT_EQ(decide_text(*p, "urgent", &c).matched_rule, "cheap-first");
  EXPECT_EQ(c.calls["k"], 0);
  Decision d = decide_text(*p, "calm", &c);
  EXPECT_TRUE(d.default_used);
  EXPECT_EQ(c.calls["k"], 1) << "two bands, one call";
  ASSERT_EQ(d.classifiers.size(), 1u);
  EXPECT_EQ(d.classifiers[0].id, "k");
}

TEST(RoutingEngine, AFailedClassifierCountsAsItsOnErrorAndFailsOpenByDefault) {
  auto p = policy_of(rules_routing(
      json::array({
          {{"id", "open"}, {"match", {{"classifier", "quiet"}}}, {"route_to", "big"}},
          {{"id", "closed"}, {"match", {{"classifier", "strict"}}}, {"route_to", "big"}},
      }),
      {{"classifiers",
        {{{"id", "quiet"}, {"type", "classifier"}, {"model", "helper"}},
         {{"id", "strict"},
          {"type", "classifier"},
          {"model", "helper"},
          {"on_error", "match_true"}}}}}));
  TableClassifiers none;  // every classifier fails
  Decision d = decide_text(*p, "x", &none);
  EXPECT_EQ(d.matched_rule, "closed");
  ASSERT_EQ(d.trace.size(), 2u);
  EXPECT_FALSE(d.trace[0].result);
  EXPECT_FALSE(d.trace[0].score.has_value()) << "a failed classifier has no score";
  EXPECT_TRUE(d.trace[1].result);
  // No classifier service at all: the same.
  EXPECT_EQ(decide_text(*p, "x", nullptr).matched_rule, "closed");
  // A single-label answer is the score of a band without a label.
  TableClassifiers one;
  one.answer("quiet", {{"anything", 0.5}});
  EXPECT_EQ(decide_text(*p, "x", &one).matched_rule, "open");
}

TEST(RoutingEngine, TheRouterSugarRoutesToTheLabelTheModelChose) {
  json doc = json::parse(R"({
    "version": "1", "recipe": "collection.router",
    "components": ["Qwen3-1.7B-GGUF", "Qwen3-8B-GGUF", "Qwen3.5-35B-A3B-GGUF"],
    "routing": {"candidates": ["Qwen3-8B-GGUF", "Qwen3.5-35B-A3B-GGUF"],
                "default_model": "Qwen3-8B-GGUF",
                "router": {"type": "llm", "model": "Qwen3-1.7B-GGUF",
                           "prompt": "Use the big one for hard questions."}}})");
  auto p = parse_route_policy(doc);
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ((*p)->classifiers.size(), 1u);
  EXPECT_EQ((*p)->classifiers[0].id, "__router");
  EXPECT_EQ((*p)->normalized_routing["rules"][1]["id"], "__route_1");
  EXPECT_FALSE((*p)->normalized_routing.contains("router"));
  TableClassifiers c;
  c.answer("__router", {{"Qwen3.5-35B-A3B-GGUF", 1.0}}, "hard");
  Decision d = decide_text(**p, "prove it", &c);
  EXPECT_EQ(d.route_to, "Qwen3.5-35B-A3B-GGUF");
  EXPECT_EQ(d.matched_rule, "__route_1");
  ASSERT_EQ(d.trace.size(), 2u);
  EXPECT_DOUBLE_EQ(*d.trace[0].score, 0.0);
  EXPECT_EQ(d.trace[1].rationale, "hard");
  // A reply that named no candidate (ok, no scores) falls open.
  c.answer("__router", {});
  EXPECT_TRUE(decide_text(**p, "prove it", &c).default_used);
}

TEST(RoutingEngine, StateLeavesReadTheRulesOwnCandidate) {
  auto p = policy_of(rules_routing(json::array({
      {{"id", "big-if-warm"},
       {"match", {{"keywords_any", {"hard"}}, {"loaded", true}}},
       {"route_to", "big"}},
      {{"id", "big-if-short-queue"},
       {"match", {{"keywords_any", {"hard"}}, {"queue_below", 2}, {"fits", true}}},
       {"route_to", "big"}},
  })));
  RouterState cold{{"big", {false, true, 0, 8.0}}};
  Decision d = decide_text(*p, "hard", nullptr, cold);
  EXPECT_EQ(d.matched_rule, "big-if-short-queue");
  ASSERT_EQ(d.trace.size(), 5u);
  EXPECT_EQ(d.trace[1].condition, "loaded");
  EXPECT_EQ(d.trace[1].candidate, "big");
  RouterState warm{{"big", {true, true, 5, 8.0}}};
  EXPECT_EQ(decide_text(*p, "hard", nullptr, warm).matched_rule, "big-if-warm");
  RouterState busy{{"big", {false, true, 2, 8.0}}};
  EXPECT_TRUE(decide_text(*p, "hard", nullptr, busy).default_used);
  RouterState full{{"big", {false, false, 0, 8.0}}};
  EXPECT_TRUE(decide_text(*p, "hard", nullptr, full).default_used);
  EXPECT_TRUE(p->reads_router);
  EXPECT_TRUE(p->reads_fits);
}

TEST(RoutingEngine, StateGatesSkipARuleBeforeItsClassifierRuns) {
  auto p = policy_of(rules_routing(
      json::array({{{"id", "to-big"}, {"match", {{"classifier", "k"}}}, {"route_to", "big"}}}),
      {{"classifiers", {{{"id", "k"}, {"type", "classifier"}, {"model", "helper"}}}},
       {"state", {{"fits", true}, {"queue_below", 3}}}}));
  TableClassifiers c;
  c.answer("k", {{"yes", 1.0}});
  RouterState no_room{{"big", {false, false, 0, 8.0}}};
  Decision d = decide_text(*p, "x", &c, no_room);
  EXPECT_TRUE(d.default_used) << "the default is not gated";
  EXPECT_EQ(c.calls["k"], 0);
  ASSERT_EQ(d.trace.size(), 1u);
  EXPECT_EQ(d.trace[0].condition, "state.fits");
  RouterState queued{{"big", {true, true, 3, 8.0}}};
  EXPECT_TRUE(decide_text(*p, "x", &c, queued).default_used);
  RouterState fine{{"big", {true, true, 2, 8.0}}};
  EXPECT_EQ(decide_text(*p, "x", &c, fine).matched_rule, "to-big");
  EXPECT_EQ(c.calls["k"], 1);
}

TEST(RoutingEngine, PreferencesChooseAmongTheRulesThatMatch) {
  json rules = json::array({
      {{"id", "to-big"}, {"match", {{"keywords_any", {"code"}}}}, {"route_to", "big"}},
      {{"id", "to-mid"}, {"match", {{"keywords_any", {"code"}}}}, {"route_to", "mid"}},
      {{"id", "to-small"}, {"match", {{"keywords_any", {"zzz"}}}}, {"route_to", "small"}},
  });
  json routing = {{"candidates", {"small", "mid", "big"}},
                  {"default_model", "small"},
                  {"rules", rules},
                  {"state", {{"prefer", {"loaded", "shortest_queue", "smallest"}}}}};
  auto p = policy_of(routing, {"small", "mid", "big"});
  // Neither loaded: the shorter queue, then the smaller.
  RouterState s{{"big", {false, true, 0, 30.0}}, {"mid", {false, true, 0, 8.0}}};
  Decision d = decide_text(*p, "code", nullptr, s);
  EXPECT_EQ(d.matched_rule, "to-mid");
  EXPECT_EQ(d.qualified, (std::vector<std::string>{"to-big", "to-mid"}));
  s["mid"].queued = 1;
  EXPECT_EQ(decide_text(*p, "code", nullptr, s).matched_rule, "to-big");
  // A loaded candidate wins over a shorter queue.
  s["big"].loaded = true;
  s["big"].queued = 4;
  EXPECT_EQ(decide_text(*p, "code", nullptr, s).matched_rule, "to-big");
  // Ties keep the rules' order.
  RouterState tie{{"big", {true, true, 0, 0}}, {"mid", {true, true, 0, 0}}};
  EXPECT_EQ(decide_text(*p, "code", nullptr, tie).matched_rule, "to-big");
  // Nothing qualifies: the default.
  EXPECT_TRUE(decide_text(*p, "prose", nullptr, s).default_used);
}

TEST(RoutingEngine, TheDecisionJsonHasLemonadesShapeAndOurExtrasOnlyWithTheTrace) {
  auto p = policy_of(rules_routing(
      json::array({{{"id", "r"},
                    {"match", {{"classifier", "k"}, {"label", "x"}}},
                    {"route_to", "big"},
                    {"outputs", {{"tier", {{"n", 1}}}}}}}),
      {{"classifiers",
        {{{"id", "k"}, {"type", "classifier"}, {"model", "helper"}, {"labels", {"x"}}}}}}));
  TableClassifiers c;
  c.answer("k", {{"x", 0.75}});
  c.answers["k"].seconds = 0.0125;
  RouterState s{{"big", {true, true, 0, 1.0}}};
  Decision d = decide_text(*p, "x", &c, s);
  json plain = decision_json(d, false);
  EXPECT_EQ(plain, json({{"version", "1"},
                         {"route_to", "big"},
                         {"matched_rule", "r"},
                         {"default_used", false},
                         {"outputs", {{"tier", {{"n", 1}}}}}}));
  json traced = decision_json(d, true, &s);
  EXPECT_EQ(
      traced["trace"],
      json::parse(R"([{"condition":"classifier:k","label":"x","result":true,"score":0.75}])"));
  EXPECT_EQ(traced["classifiers"][0]["ms"], 12.5);
  EXPECT_EQ(traced["classifiers"][0]["scores"]["x"], 0.75);
  EXPECT_EQ(traced["candidates"]["big"]["loaded"], true);
}

}  // namespace
}  // namespace lemon::routing
