#include "lemon/routing/route_engine.h"

#include <algorithm>
#include <cmath>

namespace lemon::routing {
namespace {

using Kind = Condition::Kind;

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_blank(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

// One decision's state: the input folded once, classifiers memoised, the
// trace, and the rule being evaluated (the state leaves read its candidate).
class Evaluation {
 public:
  Evaluation(const RoutePolicy& policy, const RouteInput& input, const RouterState& state,
             ClassifierSource* source, Decision& decision, bool want_trace)
      : policy_(policy),
        input_(input),
        state_(state),
        source_(source),
        decision_(decision),
        want_trace_(want_trace),
        runs_(policy.classifiers.size()) {}

  bool passes_gates(const Rule& rule) {
    const CandidateState& c = candidate(rule.route_to);
    if (policy_.state.fits && !record("state.fits", c.fits, rule.route_to)) {
      return false;
    }
    if (policy_.state.queue_below &&
        !record("state.queue_below", c.queued < *policy_.state.queue_below, rule.route_to)) {
      return false;
    }
    return true;
  }

  bool matches(const Rule& rule) {
    rule_ = &rule;
    return eval(rule.match);
  }

  const CandidateState& candidate(const std::string& name) const {
    static const CandidateState kAbsent;
    auto it = state_.find(name);
    return it == state_.end() ? kAbsent : it->second;
  }

 private:
  bool eval(const MatchNode& node) {
    switch (node.kind) {
      case MatchNode::Kind::kAll:
        return std::all_of(node.children.begin(), node.children.end(),
                           [this](const MatchNode& child) { return eval(child); });
      case MatchNode::Kind::kAny:
        return std::any_of(node.children.begin(), node.children.end(),
                           [this](const MatchNode& child) { return eval(child); });
      case MatchNode::Kind::kNot:
        return !eval(node.children.front());
      case MatchNode::Kind::kLeaf:
        return std::all_of(node.conditions.begin(), node.conditions.end(),
                           [this](const Condition& c) { return test(c); });
    }
    return false;
  }

  bool record(const char* name, bool result, const std::string& candidate = {}) {
    if (want_trace_) {
      TraceEntry e;
      e.condition = name;
      e.result = result;
      e.candidate = candidate;
      decision_.trace.push_back(std::move(e));
    }
    return result;
  }

  const std::string& folded() {
    if (!folded_) {
      std::string lower = input_.text;
      for (char& ch : lower) {
        if (ch >= 'A' && ch <= 'Z') {
          ch = static_cast<char>(ch - 'A' + 'a');
        }
      }
      folded_ = std::move(lower);
    }
    return *folded_;
  }

  bool keyword(const std::string& word) { return folded().find(word) != std::string::npos; }

  bool metadata(const Condition& c) const {
    auto it = input_.metadata.find(c.metadata_key);
    const bool present = it != input_.metadata.end() && !trimmed(it->second).empty();
    switch (c.metadata_op) {
      case Condition::MetadataOp::kExists:
        return present == c.flag;
      case Condition::MetadataOp::kEquals:
        return present && it->second == c.metadata_equals;
      case Condition::MetadataOp::kAny: {
        if (!present) {
          return false;
        }
        std::string_view rest = it->second;
        for (;;) {
          const auto comma = rest.find(',');
          const std::string_view token = trimmed(rest.substr(0, comma));
          if (!token.empty() &&
              std::find(c.keywords.begin(), c.keywords.end(), token) != c.keywords.end()) {
            return true;
          }
          if (comma == std::string_view::npos) {
            return false;
          }
          rest.remove_prefix(comma + 1);
        }
      }
    }
    return false;
  }

  bool regex(const Condition& c) const {
    if (input_.text.size() > kMaxRegexInput) {
      return false;
    }
    try {
      return std::regex_search(input_.text, *c.regex);
    } catch (const std::regex_error&) {
      return false;  // the search gave up (complexity): no match
    }
  }

  const ClassifierResult& classify(std::size_t index) {
    if (!runs_[index]) {
      const Classifier& k = policy_.classifiers[index];
      ClassifierResult result;
      if (source_ == nullptr) {
        result.error = "no classifier service";
      } else {
        result = source_->classify(k, input_);
      }
      decision_.classifiers.push_back({k.id, result});
      runs_[index] = std::move(result);
    }
    return *runs_[index];
  }

  bool band(const Condition& c) {
    const Classifier& k = policy_.classifiers[c.classifier];
    const ClassifierResult& r = classify(c.classifier);
    TraceEntry e;
    e.condition = "classifier:" + k.id;
    e.label = c.label;
    if (!r.ok) {
      e.result = k.on_error_match;
    } else {
      const std::string& label = !c.label.empty() ? c.label : k.default_label;
      double score = 0.0;
      if (!label.empty()) {
        auto it = r.scores.find(label);
        score = it == r.scores.end() ? 0.0 : it->second;
        if (it != r.scores.end()) {
          e.rationale = r.rationale;
        }
      } else if (r.scores.size() == 1) {
        score = r.scores.begin()->second;
        e.rationale = r.rationale;
      }
      e.score = score;
      e.result = score >= c.min_score && score <= c.max_score;
    }
    const bool result = e.result;
    if (want_trace_) {
      decision_.trace.push_back(std::move(e));
    }
    return result;
  }

  bool test(const Condition& c) {
    const CandidateState& target = candidate(rule_->route_to);
    switch (c.kind) {
      case Kind::kClassifierBand:
        return band(c);
      case Kind::kHasImages:
        return record("has_images", input_.has_images == c.flag);
      case Kind::kHasTools:
        return record("has_tools", input_.has_tools == c.flag);
      case Kind::kKeywordsAll:
        return record("keywords_all",
                      std::all_of(c.keywords.begin(), c.keywords.end(),
                                  [this](const std::string& w) { return keyword(w); }));
      case Kind::kKeywordsAny:
        return record("keywords_any",
                      std::any_of(c.keywords.begin(), c.keywords.end(),
                                  [this](const std::string& w) { return keyword(w); }));
      case Kind::kMaxChars:
        return record("max_chars", static_cast<std::int64_t>(input_.chars()) <= c.number);
      case Kind::kMinChars:
        return record("min_chars", static_cast<std::int64_t>(input_.chars()) >= c.number);
      case Kind::kMetadata:
        return record("metadata", metadata(c));
      case Kind::kRegex:
        return record("regex", regex(c));
      case Kind::kFits:
        return record("fits", target.fits == c.flag, rule_->route_to);
      case Kind::kLoaded:
        return record("loaded", target.loaded == c.flag, rule_->route_to);
      case Kind::kQueueBelow:
        return record("queue_below", target.queued < c.number, rule_->route_to);
    }
    return false;
  }

  const RoutePolicy& policy_;
  const RouteInput& input_;
  const RouterState& state_;
  ClassifierSource* source_;
  Decision& decision_;
  const bool want_trace_;
  const Rule* rule_ = nullptr;
  std::optional<std::string> folded_;
  std::vector<std::optional<ClassifierResult>> runs_;
};

// True when candidate `a` ranks before `b` by the policy's preferences.
bool preferred(const StateRules& rules, const CandidateState& a, const CandidateState& b) {
  for (Preference p : rules.prefer) {
    switch (p) {
      case Preference::kLoaded:
        if (a.loaded != b.loaded) {
          return a.loaded;
        }
        break;
      case Preference::kShortestQueue:
        if (a.queued != b.queued) {
          return a.queued < b.queued;
        }
        break;
      case Preference::kSmallest: {
        const double sa = a.size_gb > 0 ? a.size_gb : HUGE_VAL;
        const double sb = b.size_gb > 0 ? b.size_gb : HUGE_VAL;
        if (sa != sb) {
          return sa < sb;
        }
        break;
      }
    }
  }
  return false;
}

void choose(Decision& d, const Rule& rule) {
  d.route_to = rule.route_to;
  d.matched_rule = rule.id;
  d.default_used = false;
  d.outputs = rule.outputs;
}

}  // namespace

Decision decide(const RoutePolicy& policy, const RouteInput& input, const RouterState& state,
                ClassifierSource* classifiers, bool want_trace) {
  Decision d;
  d.route_to = policy.default_model;
  d.default_used = true;
  Evaluation eval(policy, input, state, classifiers, d, want_trace);
  try {
    const Rule* best = nullptr;
    for (const Rule& rule : policy.rules) {
      if (!eval.passes_gates(rule) || !eval.matches(rule)) {
        continue;
      }
      if (policy.state.prefer.empty()) {
        best = &rule;
        break;
      }
      d.qualified.push_back(rule.id);
      if (best == nullptr ||
          preferred(policy.state, eval.candidate(rule.route_to), eval.candidate(best->route_to))) {
        best = &rule;
      }
    }
    if (best != nullptr) {
      choose(d, *best);
    }
  } catch (const std::exception&) {
    // Fail open: the default, with the trace gathered so far.
    d.route_to = policy.default_model;
    d.matched_rule.clear();
    d.default_used = true;
    d.outputs = nlohmann::json::object();
  }
  return d;
}

std::string route_header(const Decision& decision) {
  return decision.matched_rule.empty() ? "default" : decision.matched_rule;
}

nlohmann::json decision_json(const Decision& d, bool with_trace, const RouterState* state) {
  nlohmann::json out = {{"version", "1"},
                        {"route_to", d.route_to},
                        {"matched_rule", d.matched_rule},
                        {"default_used", d.default_used},
                        {"outputs", d.outputs}};
  if (!with_trace) {
    return out;
  }
  if (!d.trace.empty()) {
    nlohmann::json trace = nlohmann::json::array();
    for (const auto& e : d.trace) {
      nlohmann::json entry = {{"condition", e.condition}, {"result", e.result}};
      if (e.score) {
        entry["score"] = *e.score;
      }
      if (!e.label.empty()) {
        entry["label"] = e.label;
      }
      if (!e.rationale.empty()) {
        entry["rationale"] = e.rationale;
      }
      if (!e.candidate.empty()) {
        entry["candidate"] = e.candidate;
      }
      trace.push_back(std::move(entry));
    }
    out["trace"] = std::move(trace);
  }
  if (!d.classifiers.empty()) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& run : d.classifiers) {
      nlohmann::json r = {{"id", run.id},
                          {"ok", run.result.ok},
                          {"scores", run.result.scores},
                          {"ms", std::round(run.result.seconds * 1e6) / 1e3}};
      if (!run.result.rationale.empty()) {
        r["rationale"] = run.result.rationale;
      }
      if (!run.result.error.empty()) {
        r["error"] = run.result.error;
      }
      runs.push_back(std::move(r));
    }
    out["classifiers"] = std::move(runs);
  }
  if (!d.qualified.empty()) {
    out["qualified"] = d.qualified;
  }
  if (state != nullptr && !state->empty()) {
    nlohmann::json candidates = nlohmann::json::object();
    for (const auto& [name, c] : *state) {
      candidates[name] = {{"loaded", c.loaded}, {"fits", c.fits}, {"queued", c.queued}};
    }
    out["candidates"] = std::move(candidates);
  }
  return out;
}

}  // namespace lemon::routing
