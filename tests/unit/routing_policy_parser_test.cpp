// The policy parser (routing/route_policy.h): what it refuses, with which
// message, in which order; names resolved and checked against components;
// regexes that would backtrack catastrophically; our extension keys.
#include <gtest/gtest.h>

#include "lemon/routing/route_policy.h"

namespace lemon::routing {
namespace {

using nlohmann::json;

json base() {
  return json::parse(R"({
    "version": "1", "model_name": "user.R", "recipe": "collection.router",
    "components": ["small", "big", "embed"],
    "routing": {"candidates": ["small", "big"], "default_model": "small",
                "rules": [{"id": "r1", "match": {"keywords_any": ["x"]}, "route_to": "big"}]}})");
}

std::string error_of(const json& doc, const ParseOptions& options = {}) {
  auto p = parse_route_policy(doc, options);
  if (p.ok()) {
    return "(parsed)";
  }
  EXPECT_EQ(p.error().code(), ErrorCode::kInvalidRoutingPolicy);
  return p.error().message();
}

TEST(RoutingPolicyParser, TheBaseParses) {
  auto p = parse_route_policy(base());
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ((*p)->candidates, (std::vector<std::string>{"small", "big"}));
  EXPECT_FALSE((*p)->reads_router);
}

TEST(RoutingPolicyParser, RefusesTheRootsAndTheRoutingBlocksMistakes) {
  json d = base();
  d["stream"] = true;
  EXPECT_EQ(error_of(d), "collection contains unknown key 'stream'");
  d = base();
  d.erase("version");
  EXPECT_EQ(error_of(d), "collection is missing required key 'version'");
  d = base();
  d["version"] = "2.0";
  EXPECT_EQ(error_of(d),
            "Unsupported collection.router schema major '2' from version '2.0'; supported major "
            "is '1'");
  d["version"] = "1.1";
  EXPECT_EQ(error_of(d),
            "Unsupported collection.router schema version '1.1'; this parser implements version "
            "'1'");
  d = base();
  d["recipe"] = "collection.omni";
  EXPECT_EQ(error_of(d), "collection.recipe must be 'collection.router' for a routing policy");
  d = base();
  d.erase("components");
  EXPECT_EQ(error_of(d), "collection.router requires a non-empty components array");
  d = base();
  d.erase("routing");
  EXPECT_EQ(error_of(d), "collection is missing required key 'routing'");
  d = base();
  d["routing"]["threshold"] = 1;
  EXPECT_EQ(error_of(d), "routing contains unknown key 'threshold'");
  d = base();
  d["routing"]["candidates"] = {"small", "gpt-9"};
  EXPECT_EQ(error_of(d),
            "routing.candidates[1] references component 'gpt-9' that is not declared in "
            "collection.components");
  d = base();
  d["routing"]["candidates"] = {"small", "small"};
  EXPECT_EQ(error_of(d), "routing.candidates[1] duplicates candidate 'small'");
  d = base();
  d["routing"]["default_model"] = "embed";
  EXPECT_EQ(error_of(d), "routing.default_model 'embed' must be listed in routing.candidates");
  d = base();
  d["routing"]["rules"] = json::array();
  EXPECT_EQ(error_of(d), "routing.rules must be a non-empty array");
}

TEST(RoutingPolicyParser, RefusesBadRules) {
  auto with_rule = [](json rule) {
    json d = base();
    d["routing"]["rules"] = json::array({rule});
    return d;
  };
  EXPECT_EQ(
      error_of(with_rule({{"id", "a b"}, {"match", {{"min_chars", 1}}}, {"route_to", "big"}})),
      "routing.rules[0].id must match [A-Za-z0-9._-]");
  EXPECT_EQ(error_of(with_rule({{"id", "a"}, {"route_to", "big"}})),
            "routing.rules[0] is missing required key 'match'");
  EXPECT_EQ(
      error_of(with_rule({{"id", "a"}, {"match", {{"min_chars", 1}}}, {"route_to", "embed"}})),
      "routing.rules[0].route_to 'embed' must be listed in routing.candidates");
  EXPECT_EQ(error_of(with_rule(
                {{"id", "a"}, {"match", {{"min_chars", 1}}}, {"route_to", "big"}, {"outputs", 1}})),
            "routing.rules[0].outputs must be an object");
  json d = base();
  d["routing"]["rules"].push_back(d["routing"]["rules"][0]);
  EXPECT_EQ(error_of(d), "routing.rules[1].id duplicates rule id 'r1'");
}

TEST(RoutingPolicyParser, RefusesBadMatchExpressions) {
  auto with_match = [](json match) {
    json d = base();
    d["routing"]["rules"][0]["match"] = std::move(match);
    return d;
  };
  const std::string at = "routing.rules[0].match";
  EXPECT_EQ(error_of(with_match({{"any", json::array()}})), at + ".any must be a non-empty array");
  EXPECT_EQ(error_of(with_match({{"any", {{{"min_chars", 1}}}}, {"all", {{{"min_chars", 1}}}}})),
            at + " must contain only one logical operator");
  EXPECT_EQ(error_of(with_match({{"not", {{"min_chars", 1}}}, {"min_chars", 2}})),
            at + " cannot mix logical operators with leaf conditions");
  EXPECT_EQ(error_of(with_match(json::object())), at + " must contain at least one leaf condition");
  EXPECT_EQ(error_of(with_match({{"keywords_any", {"a", ""}}})),
            at + ".keywords_any[1] must be a non-empty string");
  EXPECT_EQ(error_of(with_match({{"min_chars", -1}})),
            at + ".min_chars must be a non-negative integer");
  EXPECT_EQ(error_of(with_match({{"has_tools", "yes"}})), at + ".has_tools must be a boolean");
  EXPECT_EQ(error_of(with_match({{"metadata", {{"key", "k"}, {"equals", "a"}, {"exists", true}}}})),
            at + ".metadata must contain exactly one comparator: equals, any, or exists");
  EXPECT_EQ(error_of(with_match({{"label", "x"}})), at + ".label requires a classifier condition");
  EXPECT_EQ(error_of(with_match({{"classifier", "nope"}})),
            at + ".classifier references unknown classifier 'nope'");
  EXPECT_EQ(error_of(with_match({{"loaded", 1}})), at + ".loaded must be a boolean");
  EXPECT_EQ(error_of(with_match({{"queue_below", 0}})),
            at + ".queue_below must be a positive integer");
  json deep = {{"min_chars", 1}};
  for (int i = 0; i < 65; ++i) {
    deep = {{"not", deep}};
  }
  EXPECT_NE(error_of(with_match(deep)).find("exceeds maximum match expression depth"),
            std::string::npos);
}

TEST(RoutingPolicyParser, RefusesRegexesThatAreEmptyInvalidOrBacktrackCatastrophically) {
  auto with_regex = [](std::string pattern) {
    json d = base();
    d["routing"]["rules"][0]["match"] = {{"regex", std::move(pattern)}};
    return error_of(d);
  };
  EXPECT_EQ(with_regex(""), "routing.rules[0].match.regex must be a non-empty string");
  for (const char* nested : {"(a+)+", "((a+))+", "(\\d+){2,}", "(x*y)*", "(?:a|b+)*z"}) {
    EXPECT_NE(with_regex(nested).find("catastrophic backtracking"), std::string::npos) << nested;
  }
  for (const char* fine : {"(a|b)+", "(a+){2}", "[(a+)]+", "\\(a+\\)+", "a+b*", "(ab)+c"}) {
    const std::string e = with_regex(fine);
    EXPECT_EQ(e.find("catastrophic"), std::string::npos) << fine << ": " << e;
  }
  EXPECT_NE(with_regex("(a)\\1").find("backreference"), std::string::npos);
  EXPECT_NE(with_regex("(unclosed").find("regex pattern is not valid ECMAScript"),
            std::string::npos);
}

TEST(RoutingPolicyParser, ChecksClassifiers) {
  auto with_classifier = [](json c) {
    json d = base();
    d["routing"]["classifiers"] = json::array({std::move(c)});
    return d;
  };
  EXPECT_EQ(error_of(with_classifier({{"id", "k"}, {"type", "llm"}, {"threshold", 1}})),
            "routing.classifiers[0] contains unknown key 'threshold'");
  EXPECT_EQ(error_of(with_classifier({{"id", "k"}, {"type", "sentiment"}, {"model", "embed"}})),
            "classifier type not implemented yet: sentiment");
  EXPECT_EQ(error_of(with_classifier({{"id", "k"}, {"type", "bayes"}, {"model", "embed"}})),
            "unknown classifier type: bayes");
  EXPECT_EQ(error_of(with_classifier(
                {{"id", "k"}, {"type", "llm"}, {"model", "embed"}, {"labels", {"a"}}})),
            "llm classifier requires prompt");
  EXPECT_EQ(error_of(with_classifier(
                {{"id", "k"}, {"type", "llm"}, {"model", "embed"}, {"prompt", "p"}})),
            "llm classifier requires at least one label (candidate)");
  EXPECT_EQ(
      error_of(with_classifier(
          {{"id", "k"}, {"type", "semantic_similarity"}, {"model", "embed"}, {"labels", {"a"}}})),
      "semantic_similarity classifier 'k' does not accept labels; concept names are the "
      "reference_phrases keys");
  EXPECT_EQ(error_of(with_classifier({{"id", "k"},
                                      {"type", "classifier"},
                                      {"model", "embed"},
                                      {"labels", {"a"}},
                                      {"default_label", "b"}})),
            "classifier 'k' default_label is not declared in labels");
  EXPECT_EQ(error_of(with_classifier(
                {{"id", "k"}, {"type", "classifier"}, {"model", "embed"}, {"on_error", "skip"}})),
            "routing.classifiers[0].on_error must be match_true or match_false");
  EXPECT_EQ(error_of(with_classifier(
                {{"id", "k"}, {"type", "classifier"}, {"model", "embed"}, {"timeout_ms", 0}})),
            "routing.classifiers[0].timeout_ms must be an integer from 1 to 600000");
  EXPECT_EQ(error_of(with_classifier({{"id", "k"}, {"type", "classifier"}, {"model", "other"}})),
            "routing.classifiers[0].model references component 'other' that is not declared in "
            "collection.components");
  // A label-less classifier's band may omit the label; one with labels
  // needs a default_label then.
  json d =
      with_classifier({{"id", "k"}, {"type", "classifier"}, {"model", "embed"}, {"labels", {"a"}}});
  d["routing"]["rules"][0]["match"] = {{"classifier", "k"}};
  EXPECT_EQ(error_of(d),
            "routing.rules[0].match omits label but classifier 'k' has no default_label");
  d["routing"]["rules"][0]["match"] = {{"classifier", "k"}, {"label", "b"}};
  EXPECT_EQ(error_of(d),
            "routing.rules[0].match.label references unknown label 'b' on classifier 'k'");
  d["routing"]["rules"][0]["match"] = {
      {"classifier", "k"}, {"label", "a"}, {"min_score", 0.9}, {"max_score", 0.1}};
  EXPECT_EQ(error_of(d), "routing.rules[0].match has min_score greater than max_score");
}

TEST(RoutingPolicyParser, ResolvesNamesAndChecksClassifierModelTypes) {
  ParseOptions options;
  options.resolve = [](std::string_view name) -> std::optional<std::string> {
    if (name == "gone") {
      return std::nullopt;
    }
    return name.starts_with("user.") ? std::string(name) : "user." + std::string(name);
  };
  options.model_type = [](std::string_view name) -> std::optional<ModelType> {
    return name == "user.embed" ? ModelType::kEmbedding : ModelType::kLlm;
  };
  auto p = parse_route_policy(base(), options);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ((*p)->default_model, "user.small");
  EXPECT_EQ((*p)->rules[0].route_to, "user.big");

  json d = base();
  d["components"].push_back("gone");
  EXPECT_EQ(error_of(d, options), "collection.components[3] references unknown component 'gone'");
  d = base();
  d["routing"]["classifiers"] = {{{"id", "k"},
                                  {"type", "semantic_similarity"},
                                  {"model", "small"},
                                  {"reference_phrases", {{"a", {"b"}}}}}};
  EXPECT_EQ(error_of(d, options),
            "routing.classifiers[0].model 'small' has type 'llm', which cannot serve "
            "semantic_similarity (needs an embedding model)");
  d["routing"]["classifiers"] = {{{"id", "k"}, {"type", "classifier"}, {"model", "embed"}}};
  EXPECT_EQ(error_of(d, options),
            "routing.classifiers[0].model 'embed' has type 'embedding', which cannot serve as a "
            "classifier (needs an LLM or classification model)");
}

TEST(RoutingPolicyParser, TheRouterSugarIsExclusiveAndChecked) {
  json d = base();
  d["routing"]["router"] = {{"type", "llm"}, {"model", "small"}, {"prompt", "p"}};
  EXPECT_EQ(error_of(d),
            "routing.router cannot be combined with routing.classifiers or routing.rules");
  d["routing"].erase("rules");
  d["routing"]["router"]["type"] = "classifier";
  EXPECT_EQ(error_of(d), "routing.router.type must be 'llm'");
  d["routing"]["router"] = {{"type", "llm"}, {"model", "small"}};
  EXPECT_EQ(error_of(d), "routing.router is missing required key 'prompt'");
}

TEST(RoutingPolicyParser, ChecksTheStateBlock) {
  json d = base();
  d["routing"]["state"] = {{"prefer", {"loaded", "cheapest"}}};
  EXPECT_EQ(error_of(d), "routing.state.prefer[1] must be one of loaded, shortest_queue, smallest");
  d["routing"]["state"] = {{"prefer", {"loaded", "loaded"}}};
  EXPECT_EQ(error_of(d), "routing.state.prefer[1] repeats 'loaded'");
  d["routing"]["state"] = {{"queue_below", 0}};
  EXPECT_EQ(error_of(d), "routing.state.queue_below must be a positive integer");
  d["routing"]["state"] = {{"evict", true}};
  EXPECT_EQ(error_of(d), "routing.state contains unknown key 'evict'");
  d["routing"]["state"] = {{"fits", true}, {"prefer", {"smallest"}}};
  auto p = parse_route_policy(d);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_TRUE((*p)->reads_fits);
  EXPECT_TRUE((*p)->reads_router);
}

TEST(RoutingPolicyParser, TakesThePolicyKeysOfAPullBody) {
  json pull = base();
  pull["stream"] = true;
  pull["do_not_upgrade"] = true;
  json doc = policy_document(pull);
  EXPECT_FALSE(doc.contains("stream"));
  EXPECT_TRUE(parse_route_policy(doc).ok());
}

}  // namespace
}  // namespace lemon::routing
