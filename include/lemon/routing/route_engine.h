// The routing decision, a pure function of (policy, request, the router's
// state, classifier scores): which candidate serves a request that names a
// `collection.router` model.
//
// Order (docs/api.md "Routing policies"):
// 1. Rules are taken in order. A rule whose candidate fails `routing.state`'s
//    gates (`fits`, `queue_below`) is skipped without evaluating its match.
// 2. Its match is evaluated: `all` stops at the first false child, `any` at
//    the first true, `not` negates; a leaf's conditions are an `all` in
//    their fixed order. The state leaves (`loaded`, `fits`, `queue_below`)
//    read the rule's own candidate.
// 3. Without `routing.state.prefer` the first rule that matches wins
//    (Lemonade's rule). With it, every rule is evaluated, and among those
//    that match the best by the preferences in order wins, then the first.
// 4. None: the request falls open to `default_model` (the gates do not
//    apply to it), matched_rule "" and default_used true.
// A classifier runs at most once per decision, and only when a band that
// needs it is reached. One that fails (an error, no answer in time) makes
// its bands' result its on_error (false unless "match_true"). Anything that
// throws during evaluation falls open with the trace gathered so far.
//
// Thread-safety: decide() is pure apart from what `classifiers` does; any
// number of threads may decide over one policy at once.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/routing/route_input.h"
#include "lemon/routing/route_policy.h"

namespace lemon::routing {

// One classifier's answer to one request.
struct ClassifierResult {
  bool ok = false;
  std::map<std::string, double> scores;  // label -> score in [0, 1]
  std::string rationale;                 // llm: the model's reason, if any
  std::string error;                     // why it failed (not ok)
  double seconds = 0.0;                  // the call's time, its model's load included
};

// Runs classifiers: in the router through its models (inference's
// ClassifierCalls), in tests from a table.
class ClassifierSource {
 public:
  virtual ~ClassifierSource() = default;
  virtual ClassifierResult classify(const Classifier& classifier, const RouteInput& input) = 0;
};

// What the router holds of one candidate when the request arrives.
struct CandidateState {
  bool loaded = false;  // a ready server
  bool fits = true;     // loaded, or its load would evict no pinned or busy model
  int queued = 0;       // requests waiting for it (a load or a free slot)
  double size_gb = 0;   // its weights; 0 when unknown (ranked last by "smallest")
};
// By candidate name; a candidate absent here is not loaded, fits and has no queue.
using RouterState = std::map<std::string, CandidateState, std::less<>>;

struct TraceEntry {
  std::string condition;  // "keywords_any", "classifier:<id>", "loaded", "state.fits", ...
  bool result = false;
  std::optional<double> score;  // a band whose classifier answered
  std::string label;            // a band's explicit label
  std::string rationale;        // the classifier's, on the label it chose
  std::string candidate;        // ours: the candidate a state condition read
};

struct ClassifierRun {
  std::string id;
  ClassifierResult result;
};

struct Decision {
  std::string route_to;
  std::string matched_rule;  // "" when it fell open
  bool default_used = false;
  nlohmann::json outputs = nlohmann::json::object();
  std::vector<TraceEntry> trace;  // only when asked for
  // Ours: each classifier that ran, in the order it ran (always kept).
  std::vector<ClassifierRun> classifiers;
  // Ours, with routing.state.prefer: the rules that qualified, in order.
  std::vector<std::string> qualified;
};

Decision decide(const RoutePolicy& policy, const RouteInput& input, const RouterState& state,
                ClassifierSource* classifiers, bool want_trace);

// x-lemonade-route's value: the matched rule, or "default".
std::string route_header(const Decision& decision);

// The `x_lemonade_route` object in Lemonade's shape (version, route_to,
// matched_rule, default_used, outputs, and `trace` when asked for and not
// empty), plus ours when asked for: `classifiers` ([{id, ok, scores,
// rationale?, error?, ms}]), `qualified` (with prefer) and `candidates`
// (the state it read: {name: {loaded, fits, queued}}) when given.
nlohmann::json decision_json(const Decision& decision, bool with_trace,
                             const RouterState* state = nullptr);

}  // namespace lemon::routing
