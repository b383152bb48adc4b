// Helpers shared by the policy parser's files (policy_parser.cpp,
// match_parser.cpp, classifier_parser.cpp): a parse fails by throwing
// PolicyError, which parse_route_policy turns into kInvalidRoutingPolicy;
// nothing outside src/routing sees it.
//
// Thread-safety: pure functions.
#pragma once

#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/enum_names.h"
#include "lemon/core/text.h"
#include "lemon/routing/route_policy.h"

namespace lemon::routing::detail {

using nlohmann::json;

inline constexpr auto kClassifierTypeNames = std::to_array<EnumName<ClassifierType>>({
    {ClassifierType::kSemanticSimilarity, "semantic_similarity"},
    {ClassifierType::kClassifier, "classifier"},
    {ClassifierType::kLlm, "llm"},
});
inline constexpr auto kPreferenceNames = std::to_array<EnumName<Preference>>({
    {Preference::kLoaded, "loaded"},
    {Preference::kShortestQueue, "shortest_queue"},
    {Preference::kSmallest, "smallest"},
});

struct PolicyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& message);

// "path[i]"
std::string at_index(const std::string& path, std::size_t i);

// `value` must be an object whose keys are all in `accepted`.
void require_keys(const json& value, std::initializer_list<std::string_view> accepted,
                  const std::string& path);
const json& required(const json& value, const char* key, const std::string& path);
std::string required_string(const json& value, const char* key, const std::string& path);
// "" when absent; a present value must be a non-empty string.
std::string optional_string(const json& value, const char* key, const std::string& path);
// An array of non-empty strings (non-empty itself).
std::vector<std::string> string_array(const json& value, const std::string& path);

// How names in the document become model names (ParseOptions::resolve) and
// whether they must be declared components.
struct NameRules {
  const ParseOptions& options;
  std::set<std::string> declared;

  std::string resolve(const std::string& original, const std::string& path) const;
  void require_declared(const std::string& resolved, const std::string& original,
                        const std::string& path) const;
  std::string component(const std::string& original, const std::string& path) const {
    std::string resolved = resolve(original, path);
    require_declared(resolved, original, path);
    return resolved;
  }
};

// The classifiers (checked) and the rules (which need them to check bands).
void parse_classifiers(const json& routing, const NameRules& names, RoutePolicy& policy);
void parse_rules(const json& routing, const NameRules& names, RoutePolicy& policy);
MatchNode parse_match(const json& expr, RoutePolicy& policy, const std::string& path,
                      std::size_t depth);

// The compiled pattern; PolicyError when it is empty, invalid ECMAScript, or
// nests unbounded quantifiers ((a+)+: catastrophic backtracking).
std::shared_ptr<const std::regex> compile_guarded_regex(const std::string& pattern,
                                                        const std::string& path);

}  // namespace lemon::routing::detail
