// RoutePolicy: a `collection.router` model's policy, parsed and checked once
// (Lemonade 11's policy schema, version "1": docs/dev/router-policy.md and
// src/cpp/resources/schemas/route_policy.schema.json at v11.7.0), with the
// router's own additions: state-aware leaves and the `routing.state` block
// (docs/api.md "Routing policies").
//
// The document is the collection itself, as POST /pull registers it:
//   {"version": "1", "model_name", "recipe": "collection.router",
//    "components": [...], "models"?: [...],
//    "routing": {"candidates", "default_model", "rules" | "router",
//                "classifiers"?, "state"?}}
// Every level rejects keys it does not know. Errors name the path of the
// offending value ("routing.rules[0].match.any[1] ...") and are reported in
// the order the document is checked: root keys, version, recipe,
// components, routing keys, candidates, default_model, router sugar,
// classifiers, rules, state. `routing.router` ({"type":"llm","model",
// "prompt"}) is sugar: it becomes one `llm` classifier `__router` whose
// labels are the candidates as written and a rule `__route_<i>` per
// candidate, so one engine evaluates every form.
//
// Thread-safety: a parsed policy is immutable; share it freely (its regexes
// are searched from any number of threads at once).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/core/model_types.h"

namespace lemon::routing {

// The deepest match expression accepted (any/all/not nesting).
inline constexpr std::size_t kMaxMatchDepth = 64;
// A regex leaf is false on an input longer than this (bytes).
inline constexpr std::size_t kMaxRegexInput = std::size_t{1} << 20;

enum class ClassifierType { kSemanticSimilarity, kClassifier, kLlm };
const char* classifier_type_name(ClassifierType type);

struct Classifier {
  std::string id;
  ClassifierType type = ClassifierType::kLlm;
  std::string model;   // resolved component name
  std::string prompt;  // llm: the author's instruction; unused by the others
  // llm, classifier: as written. semantic_similarity: the concept names
  // (reference_phrases' keys, in sorted order).
  std::vector<std::string> labels;
  std::string default_label;  // "" when none
  // semantic_similarity: concept -> phrases, in `labels`' order.
  std::vector<std::pair<std::string, std::vector<std::string>>> reference_phrases;
  // on_error: "match_true" makes a failed classifier's band true; the
  // default, "match_false", fails open.
  bool on_error_match = false;
  // Ours: the most tokens an llm or classifier reply may take, and how long
  // the whole call (its model's load included) may take before it counts
  // as failed.
  int max_tokens = 256;
  std::chrono::milliseconds timeout{10'000};
};

// One condition of a leaf object. A leaf with several keys is their `all`,
// evaluated in a fixed order: the classifier band, then has_images,
// has_tools, keywords_all, keywords_any, max_chars, metadata, min_chars,
// regex (Lemonade's), then ours: fits, loaded, queue_below.
struct Condition {
  enum class Kind {
    kClassifierBand,
    kHasImages,
    kHasTools,
    kKeywordsAll,
    kKeywordsAny,
    kMaxChars,
    kMetadata,
    kMinChars,
    kRegex,
    kFits,
    kLoaded,
    kQueueBelow,
  };
  Kind kind = Kind::kHasTools;
  bool flag = false;                  // has_images, has_tools, fits, loaded; metadata exists
  std::int64_t number = 0;            // min_chars, max_chars, queue_below
  std::vector<std::string> keywords;  // ASCII-lowercased; metadata `any` as written
  std::shared_ptr<const std::regex> regex;
  // metadata: key and comparator.
  enum class MetadataOp { kEquals, kAny, kExists };
  std::string metadata_key;
  MetadataOp metadata_op = MetadataOp::kExists;
  std::string metadata_equals;
  // classifier band: its classifier's index in RoutePolicy::classifiers,
  // the label as written ("" when omitted), the inclusive bounds.
  std::size_t classifier = 0;
  std::string label;
  double min_score = 0.5;
  double max_score = 1.0;
};

struct MatchNode {
  enum class Kind { kAny, kAll, kNot, kLeaf };
  Kind kind = Kind::kLeaf;
  std::vector<MatchNode> children;    // any, all: one or more; not: exactly one
  std::vector<Condition> conditions;  // leaf: one or more, in evaluation order
};

struct Rule {
  std::string id;
  MatchNode match;
  std::string route_to;  // resolved
  nlohmann::json outputs = nlohmann::json::object();
};

// Ours: `routing.state`. `fits` and `queue_below` hold for every rule (a
// rule whose candidate fails them is skipped before its match is
// evaluated); `prefer`, when given, evaluates every rule and takes, among
// those that match, the best by these criteria in order, then the first.
enum class Preference { kLoaded, kShortestQueue, kSmallest };
const char* preference_name(Preference preference);

struct StateRules {
  bool fits = false;
  std::optional<std::int64_t> queue_below;
  std::vector<Preference> prefer;
  bool empty() const { return !fits && !queue_below && prefer.empty(); }
};

struct RoutePolicy {
  std::vector<std::string> components;  // resolved, as declared
  std::vector<std::string> candidates;  // resolved, in order
  std::string default_model;            // resolved
  std::vector<Classifier> classifiers;
  std::vector<Rule> rules;
  StateRules state;
  // What the engine reads of the router: a rule or `routing.state` uses
  // fits, loaded, or queue lengths (the caller may skip measuring the rest).
  bool reads_fits = false;
  bool reads_router = false;
  // `routing` in its core form (the router sugar desugared), for
  // /routing/validate's normalized_policy.
  nlohmann::json normalized_routing;

  const Classifier* classifier(std::string_view id) const;
};

struct ParseOptions {
  // A component's name as the catalogue knows it (a bare name may become
  // "user.<name>"); nullopt when no model has that name. Unset: every name
  // stands for itself (POST /routing/validate).
  std::function<std::optional<std::string>(std::string_view)> resolve;
  // The type of a resolved model, to check that a semantic_similarity
  // classifier's model embeds and a classifier's model chats; unset: no check.
  std::function<std::optional<ModelType>(std::string_view)> model_type;
  // Candidates, default_model, route_to and classifier models must be
  // listed in `components`.
  bool require_declared_components = true;
};

// The checked policy; kInvalidRoutingPolicy with the parser's message
// otherwise (callers prefix it: "Invalid routing policy: ...").
Result<std::shared_ptr<const RoutePolicy>> parse_route_policy(const nlohmann::json& collection,
                                                              const ParseOptions& options = {});

// The policy keys of a POST /pull body (the rest are pull's own: stream,
// do_not_upgrade, ...): what parse_route_policy is given.
nlohmann::json policy_document(const nlohmann::json& pull_body);

}  // namespace lemon::routing
