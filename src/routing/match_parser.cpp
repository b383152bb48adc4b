// routing.rules and their match expressions: any/all/not nodes, leaf
// objects (their conditions checked, then put in evaluation order), and the
// guard against regexes that backtrack catastrophically.
#include <algorithm>
#include <vector>

#include "parse_support.h"

namespace lemon::routing::detail {
namespace {

using Kind = Condition::Kind;

bool is_rule_id(const std::string& id) {
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::optional<double> score_bound(const json& leaf, const char* key, const std::string& path) {
  auto it = leaf.find(key);
  if (it == leaf.end()) {
    return std::nullopt;
  }
  if (!it->is_number()) {
    fail(path + "." + key + " must be numeric");
  }
  const double value = it->get<double>();
  if (value < 0.0 || value > 1.0) {
    fail(path + "." + key + " must be in [0, 1]");
  }
  return value;
}

Condition classifier_band(const json& leaf, const RoutePolicy& policy, const std::string& path) {
  Condition c;
  c.kind = Kind::kClassifierBand;
  const std::string id = required_string(leaf, "classifier", path);
  auto found = std::find_if(policy.classifiers.begin(), policy.classifiers.end(),
                            [&](const Classifier& k) { return k.id == id; });
  if (found == policy.classifiers.end()) {
    fail(path + ".classifier references unknown classifier '" + id + "'");
  }
  c.classifier = static_cast<std::size_t>(found - policy.classifiers.begin());
  if (leaf.contains("label")) {
    c.label = optional_string(leaf, "label", path);
    if (std::find(found->labels.begin(), found->labels.end(), c.label) == found->labels.end()) {
      fail(path + ".label references unknown label '" + c.label + "' on classifier '" + id + "'");
    }
  } else if (!found->labels.empty() && found->default_label.empty()) {
    fail(path + " omits label but classifier '" + id + "' has no default_label");
  }
  const auto low = score_bound(leaf, "min_score", path);
  const auto high = score_bound(leaf, "max_score", path);
  if (low && high && *low > *high) {
    fail(path + " has min_score greater than max_score");
  }
  // A band with neither bound means "at least 0.5".
  c.min_score = low ? *low : (high ? 0.0 : 0.5);
  c.max_score = high ? *high : 1.0;
  return c;
}

Condition metadata_condition(const json& spec, const std::string& path) {
  require_keys(spec, {"key", "equals", "any", "exists"}, path);
  Condition c;
  c.kind = Kind::kMetadata;
  c.metadata_key = required_string(spec, "key", path);
  const int comparators = static_cast<int>(spec.contains("equals")) +
                          static_cast<int>(spec.contains("any")) +
                          static_cast<int>(spec.contains("exists"));
  if (comparators != 1) {
    fail(path + " must contain exactly one comparator: equals, any, or exists");
  }
  if (auto it = spec.find("equals"); it != spec.end()) {
    if (!it->is_string()) {
      fail(path + ".equals must be a string");
    }
    c.metadata_op = Condition::MetadataOp::kEquals;
    c.metadata_equals = it->get<std::string>();
  } else if (auto any = spec.find("any"); any != spec.end()) {
    c.metadata_op = Condition::MetadataOp::kAny;
    c.keywords = string_array(*any, path + ".any");
  } else {
    const json& exists = spec.at("exists");
    if (!exists.is_boolean()) {
      fail(path + ".exists must be a boolean");
    }
    c.metadata_op = Condition::MetadataOp::kExists;
    c.flag = exists.get<bool>();
  }
  return c;
}

Condition flag_condition(Kind kind, const json& value, const std::string& path) {
  if (!value.is_boolean()) {
    fail(path + " must be a boolean");
  }
  Condition c;
  c.kind = kind;
  c.flag = value.get<bool>();
  return c;
}

// The leaf's conditions, checked in Lemonade's order and returned in
// evaluation order (the band, Lemonade's keys sorted, then ours).
std::vector<Condition> parse_leaf(const json& leaf, RoutePolicy& policy, const std::string& path) {
  std::vector<Condition> out;
  if (leaf.contains("classifier")) {
    out.push_back(classifier_band(leaf, policy, path));
  } else {
    for (const char* only : {"label", "min_score", "max_score"}) {
      if (leaf.contains(only)) {
        fail(path + "." + only + " requires a classifier condition");
      }
    }
  }
  std::vector<std::pair<std::string, Condition>> deterministic;
  for (const char* op : {"keywords_any", "keywords_all"}) {
    if (auto it = leaf.find(op); it != leaf.end()) {
      Condition c;
      c.kind = std::string_view(op) == "keywords_any" ? Kind::kKeywordsAny : Kind::kKeywordsAll;
      for (const auto& word : string_array(*it, path + "." + op)) {
        c.keywords.push_back(ascii_lower(word));
      }
      deterministic.emplace_back(op, std::move(c));
    }
  }
  if (auto it = leaf.find("regex"); it != leaf.end()) {
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
      fail(path + ".regex must be a non-empty string");
    }
    Condition c;
    c.kind = Kind::kRegex;
    c.regex = compile_guarded_regex(it->get<std::string>(), path + ".regex");
    deterministic.emplace_back("regex", std::move(c));
  }
  for (const char* op : {"min_chars", "max_chars"}) {
    if (auto it = leaf.find(op); it != leaf.end()) {
      if (!it->is_number_integer() || it->get<std::int64_t>() < 0) {
        fail(path + "." + op + " must be a non-negative integer");
      }
      Condition c;
      c.kind = std::string_view(op) == "min_chars" ? Kind::kMinChars : Kind::kMaxChars;
      c.number = it->get<std::int64_t>();
      deterministic.emplace_back(op, std::move(c));
    }
  }
  for (const char* op : {"has_tools", "has_images"}) {
    if (auto it = leaf.find(op); it != leaf.end()) {
      const Kind kind = std::string_view(op) == "has_tools" ? Kind::kHasTools : Kind::kHasImages;
      deterministic.emplace_back(op, flag_condition(kind, *it, path + "." + op));
    }
  }
  if (auto it = leaf.find("metadata"); it != leaf.end()) {
    deterministic.emplace_back("metadata", metadata_condition(*it, path + ".metadata"));
  }
  std::sort(deterministic.begin(), deterministic.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, c] : deterministic) {
    out.push_back(std::move(c));
  }
  for (const char* op : {"fits", "loaded"}) {
    if (auto it = leaf.find(op); it != leaf.end()) {
      const Kind kind = std::string_view(op) == "fits" ? Kind::kFits : Kind::kLoaded;
      out.push_back(flag_condition(kind, *it, path + "." + op));
      policy.reads_router = true;
      policy.reads_fits = policy.reads_fits || kind == Kind::kFits;
    }
  }
  if (auto it = leaf.find("queue_below"); it != leaf.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1) {
      fail(path + ".queue_below must be a positive integer");
    }
    Condition c;
    c.kind = Kind::kQueueBelow;
    c.number = it->get<std::int64_t>();
    out.push_back(std::move(c));
    policy.reads_router = true;
  }
  if (out.empty()) {
    fail(path + " must contain at least one leaf condition");
  }
  return out;
}

}  // namespace

MatchNode parse_match(const json& expr, RoutePolicy& policy, const std::string& path,
                      std::size_t depth) {
  if (depth > kMaxMatchDepth) {
    fail(path + " exceeds maximum match expression depth");
  }
  require_keys(expr,
               {"any", "all", "not", "classifier", "label", "min_score", "max_score",
                "keywords_any", "keywords_all", "regex", "min_chars", "max_chars", "has_tools",
                "has_images", "metadata", "fits", "loaded", "queue_below"},
               path);
  const int logical = static_cast<int>(expr.contains("any")) +
                      static_cast<int>(expr.contains("all")) +
                      static_cast<int>(expr.contains("not"));
  MatchNode node;
  if (logical == 0) {
    node.kind = MatchNode::Kind::kLeaf;
    node.conditions = parse_leaf(expr, policy, path);
    return node;
  }
  if (logical > 1) {
    fail(path + " must contain only one logical operator");
  }
  if (expr.size() != 1) {
    fail(path + " cannot mix logical operators with leaf conditions");
  }
  if (expr.contains("not")) {
    node.kind = MatchNode::Kind::kNot;
    node.children.push_back(parse_match(expr.at("not"), policy, path + ".not", depth + 1));
    return node;
  }
  const bool any = expr.contains("any");
  const char* key = any ? "any" : "all";
  const json& children = expr.at(key);
  if (!children.is_array() || children.empty()) {
    fail(path + "." + key + " must be a non-empty array");
  }
  node.kind = any ? MatchNode::Kind::kAny : MatchNode::Kind::kAll;
  for (std::size_t i = 0; i < children.size(); ++i) {
    node.children.push_back(
        parse_match(children[i], policy, at_index(path + "." + key, i), depth + 1));
  }
  return node;
}

void parse_rules(const json& routing, const NameRules& names, RoutePolicy& policy) {
  const json& rules = required(routing, "rules", "routing");
  if (!rules.is_array() || rules.empty()) {
    fail("routing.rules must be a non-empty array");
  }
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string path = at_index("routing.rules", i);
    const json& entry = rules[i];
    require_keys(entry, {"id", "match", "route_to", "outputs"}, path);
    Rule rule;
    rule.id = required_string(entry, "id", path);
    if (!is_rule_id(rule.id)) {
      fail(path + ".id must match [A-Za-z0-9._-]");
    }
    for (const auto& earlier : policy.rules) {
      if (earlier.id == rule.id) {
        fail(path + ".id duplicates rule id '" + rule.id + "'");
      }
    }
    rule.match = parse_match(required(entry, "match", path), policy, path + ".match", 0);
    const std::string original = required_string(entry, "route_to", path);
    rule.route_to = names.component(original, path + ".route_to");
    if (std::find(policy.candidates.begin(), policy.candidates.end(), rule.route_to) ==
        policy.candidates.end()) {
      std::string message = path;
      message += ".route_to '" + original + "' must be listed in routing.candidates";
      fail(message);
    }
    if (auto it = entry.find("outputs"); it != entry.end()) {
      if (!it->is_object()) {
        fail(path + ".outputs must be an object");
      }
      rule.outputs = *it;
    }
    policy.rules.push_back(std::move(rule));
  }
}

namespace {

// Where the quantifier starting at `i` ends, and whether it is unbounded
// (*, +, {m,}); nullopt when `i` starts no quantifier ("{" as a literal).
struct Quantifier {
  std::size_t end = 0;
  bool unbounded = false;
};

std::optional<Quantifier> quantifier_at(const std::string& p, std::size_t i) {
  const char c = p[i];
  if (c == '*' || c == '+') {
    return Quantifier{i + 1, true};
  }
  if (c == '?') {
    return Quantifier{i + 1, false};
  }
  if (c != '{') {
    return std::nullopt;
  }
  std::size_t j = i + 1;
  const std::size_t digits = j;
  while (j < p.size() && p[j] >= '0' && p[j] <= '9') {
    ++j;
  }
  if (j == digits || j >= p.size()) {
    return std::nullopt;
  }
  if (p[j] == '}') {
    return Quantifier{j + 1, false};
  }
  if (p[j] != ',') {
    return std::nullopt;
  }
  ++j;
  const std::size_t upper = j;
  while (j < p.size() && p[j] >= '0' && p[j] <= '9') {
    ++j;
  }
  if (j >= p.size() || p[j] != '}') {
    return std::nullopt;
  }
  return Quantifier{j + 1, j == upper};
}

// True when an unbounded quantifier applies to a group that holds one
// itself: (a+)+, ((a+))+, (\d+){2,}. Escapes and character classes are
// atoms; a malformed pattern is left to std::regex to report.
bool nests_unbounded_quantifiers(const std::string& p) {
  std::vector<bool> groups{false};  // per open group: holds an unbounded quantifier
  bool after_unbounded_group = false;
  std::size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\') {
      i += 2;
      after_unbounded_group = false;
    } else if (c == '[') {
      ++i;
      if (i < p.size() && p[i] == '^') {
        ++i;
      }
      if (i < p.size() && p[i] == ']') {
        ++i;
      }
      while (i < p.size() && p[i] != ']') {
        i += p[i] == '\\' ? 2 : 1;
      }
      ++i;
      after_unbounded_group = false;
    } else if (c == '(') {
      groups.push_back(false);
      ++i;
      if (i < p.size() && p[i] == '?') {  // (?: (?= (?!
        i += 2;
      }
      after_unbounded_group = false;
    } else if (c == ')') {
      if (groups.size() < 2) {
        return false;
      }
      const bool inner = groups.back();
      groups.pop_back();
      groups.back() = groups.back() || inner;
      after_unbounded_group = inner;
      ++i;
    } else if (auto q = quantifier_at(p, i)) {
      if (q->unbounded) {
        if (after_unbounded_group) {
          return true;
        }
        groups.back() = true;
      }
      after_unbounded_group = false;
      i = q->end;
      if (i < p.size() && p[i] == '?') {  // lazy
        ++i;
      }
    } else {
      after_unbounded_group = false;
      ++i;
    }
  }
  return false;
}

}  // namespace

std::shared_ptr<const std::regex> compile_guarded_regex(const std::string& pattern,
                                                        const std::string& path) {
  if (pattern.empty()) {
    fail(path + ": regex pattern must be non-empty (an empty pattern matches everything)");
  }
  if (nests_unbounded_quantifiers(pattern)) {
    fail(path +
         ": regex pattern is prone to catastrophic backtracking (nested unbounded quantifier "
         "such as (X+)+); rewrite to avoid the nesting");
  }
  try {
    // The polynomial mode (libstdc++'s breadth-first matcher) keeps the
    // search's stack and time bounded by the pattern, not the input: the
    // default depth-first matcher recurses once per character matched and
    // would overflow a connection thread's stack on a long prompt. It has
    // no backreferences (the constructor refuses them as too complex).
    return std::make_shared<const std::regex>(
        pattern, std::regex::ECMAScript | std::regex_constants::__polynomial);
  } catch (const std::regex_error& e) {
    if (e.code() == std::regex_constants::error_complexity) {
      fail(path + ": regex pattern uses a backreference, which is not supported");
    }
    fail(path + ": regex pattern is not valid ECMAScript: " + e.what());
  }
}

}  // namespace lemon::routing::detail
