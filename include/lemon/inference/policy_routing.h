// PolicyRouting: the routing policies (`collection.router` models) at work
// on the request path. InferenceGateway::forward asks it, before any lease,
// which candidate serves a request that names a policy; it decides with the
// pure engine (routing/route_engine.h) over the router's published view and
// the policy's classifiers (ClassifierCalls), and counts what it decided.
//
// - Which names are collections is kept in memory and read again from the
//   catalogue (its collections and aliases: user_models.json when it
//   changed, no folder scan) at most once a second, by one request while
//   the others go on, and at once after forget() (a pull or a delete of a
//   collection). A collection is named by its name, "<name>:latest", a bare
//   name standing for "user.<name>", or an alias. A request for another
//   model costs one lookup in that set.
// - A policy is parsed once (with the catalogue's names and types) and kept
//   until its registration changes; its candidates' facts (type, device,
//   size) with it. One that did not check, or whose candidates' sizes were
//   not all known while it reads what fits, is parsed again after the next
//   refresh.
// - Counters: decisions, conversations switched to another model (Lemonade's
//   routing_decisions_total and routing_switches_total: a conversation is
//   its first system and user messages' fingerprint, the last 1024 kept),
//   and hits per policy and rule; each decision also goes to the telemetry
//   hub (metrics labelled by policy and rule, a `request` event).
//
// Ownership: holds references to the catalogue, router and hub, which
// outlive it; the gateway (classifier calls) is given once before serving.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "lemon/core/mutex.h"
#include "lemon/inference/candidate_state.h"
#include "lemon/inference/classifier_calls.h"
#include "lemon/models/catalogue.h"
#include "lemon/router/router.h"
#include "lemon/routing/route_engine.h"
#include "lemon/telemetry/telemetry_hub.h"

namespace lemon::inference {

class InferenceGateway;

// Parse options that resolve names through `catalogue` (a bare name may be
// "user.<name>") and check classifier models' types there. `catalogue`
// must outlive the options.
routing::ParseOptions catalogue_parse_options(const ModelCatalogue& catalogue);

// A request a policy routed.
struct RoutedRequest {
  std::string policy;  // the collection's registered name
  routing::Decision decision;
  bool trace = false;     // the client asked for route_trace
  std::string header;     // x-lemonade-route's value
  nlohmann::json object;  // x_lemonade_route
  double decide_seconds = 0.0;
};

class PolicyRouting {
 public:
  PolicyRouting(const ModelCatalogue& catalogue, const Router& router,
                telemetry::TelemetryHub& hub);

  // The classifiers' calls go through `gateway` (set once, before serving).
  void use_gateway(InferenceGateway* gateway) { gateway_ = gateway; }

  struct Collection {
    std::string name;    // as registered
    bool router = true;  // false: collection.omni
  };
  // `model` names a collection (or is "X" for a registered "user.X").
  std::optional<Collection> collection(std::string_view model) LEMON_EXCLUDES(mu_);

  // The decision for `body` (chat, completions or Responses) sent to the
  // policy `policy`. kInvalidRequest for a route_trace that is no boolean;
  // kInvalidRoutingPolicy when its registration no longer checks. `gone`:
  // the client left (classifier calls stop).
  Result<RoutedRequest> route(const std::string& policy, const nlohmann::json& body,
                              std::uint64_t request_id, const std::function<bool()>& gone)
      LEMON_EXCLUDES(mu_, counts_mu_);

  // POST /routing/validate: `document` checked as a registration is (names
  // resolved by the catalogue; candidates must be declared components), then
  // `input` decided with the trace on, live classifiers, router state. Not counted.
  struct Validation {
    std::shared_ptr<const routing::RoutePolicy> policy;
    routing::Decision decision;
    routing::RouterState state;
  };
  Result<Validation> validate(const nlohmann::json& document, const routing::RouteInput& input,
                              const std::function<bool()>& gone);

  // Names resolved and classifier models' types checked against the
  // catalogue (a registration's check).
  routing::ParseOptions parse_options() const;

  // A collection was registered, changed or deleted.
  void forget() LEMON_EXCLUDES(mu_);

  // {"routing_decisions_total", "routing_switches_total",
  //  "routing_policies": {policy: {"decisions", "switches", "rules": {rule: n}}}}
  nlohmann::json stats() const LEMON_EXCLUDES(counts_mu_);

 private:
  struct Entry {
    bool router = true;
    std::string document;  // the registration, as the policy's document
    std::shared_ptr<const routing::RoutePolicy> policy;  // parsed on first use
    std::vector<CandidateFacts> facts;
    std::optional<Error> invalid;
  };
  struct PolicyCounts {
    std::uint64_t decisions = 0;
    std::uint64_t switches = 0;
    std::map<std::string, std::uint64_t> rules;
  };

  void refresh_if_stale() LEMON_EXCLUDES(mu_);
  // The entry of `policy`, parsed; the error when it does not check.
  Result<std::shared_ptr<const Entry>> entry(const std::string& policy) LEMON_EXCLUDES(mu_);
  routing::RouterState state_for(const Entry& e) const;
  // Counts a decision; true when it switched its conversation's model.
  bool count(const std::string& policy, const routing::Decision& d, std::uint64_t conversation)
      LEMON_EXCLUDES(counts_mu_);

  const ModelCatalogue& catalogue_;
  const Router& router_;
  telemetry::TelemetryHub& hub_;
  InferenceGateway* gateway_ = nullptr;
  PhraseEmbeddings phrases_;

  // Reads the catalogue's collections and swaps them in (no lock held
  // while it reads); one reader at a time (refresh_mu_).
  void refresh() LEMON_EXCLUDES(mu_, refresh_mu_);

  Mutex refresh_mu_;  // serializes refresh()
  std::atomic<bool> refreshing_{false};
  std::atomic<std::int64_t> refreshed_ns_{0};  // steady clock, when last read

  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<const Entry>, std::less<>> entries_ LEMON_GUARDED_BY(mu_);
  // alias -> the collection it stands for
  std::map<std::string, std::string, std::less<>> aliases_ LEMON_GUARDED_BY(mu_);

  mutable Mutex counts_mu_;
  std::uint64_t decisions_ LEMON_GUARDED_BY(counts_mu_) = 0;
  std::uint64_t switches_ LEMON_GUARDED_BY(counts_mu_) = 0;
  std::map<std::string, PolicyCounts> per_policy_ LEMON_GUARDED_BY(counts_mu_);
  // Conversations seen (fingerprint -> last candidate), least recent first.
  std::list<std::uint64_t> recent_ LEMON_GUARDED_BY(counts_mu_);
  struct Seen {
    std::string route_to;
    std::list<std::uint64_t>::iterator at;
  };
  std::unordered_map<std::uint64_t, Seen> seen_ LEMON_GUARDED_BY(counts_mu_);
};

}  // namespace lemon::inference
