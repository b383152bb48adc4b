#include "lemon/inference/policy_routing.h"

#include <algorithm>

#include "lemon/core/log.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/routing/route_input.h"

namespace lemon::inference {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kNamesFresh{1};
constexpr std::size_t kConversationsKept = 1024;
// Ollama's clients name a model "X:latest".
constexpr std::string_view kLatestTag = ":latest";

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// A registered router as the policy document the parser reads.
nlohmann::json policy_document_of(const ModelInfo& info) {
  nlohmann::json doc = {
      {"model_name", info.name}, {"recipe", info.recipe}, {"components", info.components}};
  if (info.collection.is_object()) {
    for (const char* key : {"version", "routing"}) {
      if (auto it = info.collection.find(key); it != info.collection.end()) {
        doc[key] = *it;
      }
    }
  }
  return doc;
}

}  // namespace

PolicyRouting::PolicyRouting(const ModelCatalogue& catalogue, const Router& router,
                             telemetry::TelemetryHub& hub)
    : catalogue_(catalogue), router_(router), hub_(hub) {
  refresh();
}

routing::ParseOptions catalogue_parse_options(const ModelCatalogue& catalogue) {
  routing::ParseOptions options;
  options.resolve = [&catalogue](std::string_view name) -> std::optional<std::string> {
    if (auto info = catalogue.find(name)) {
      return info->name;
    }
    if (!name.starts_with("user.")) {
      if (auto info = catalogue.find("user." + std::string(name))) {
        return info->name;
      }
    }
    return std::nullopt;
  };
  options.model_type = [&catalogue](std::string_view name) -> std::optional<ModelType> {
    auto info = catalogue.find(name);
    return info ? std::optional<ModelType>(info->type) : std::nullopt;
  };
  return options;
}

routing::ParseOptions PolicyRouting::parse_options() const {
  return catalogue_parse_options(catalogue_);
}

void PolicyRouting::refresh() {
  MutexLock serial(refresh_mu_);
  refreshed_ns_.store(now_ns(), std::memory_order_relaxed);
  std::map<std::string, std::shared_ptr<const Entry>, std::less<>> fresh;
  for (const auto& info : catalogue_.collections()) {
    auto e = std::make_shared<Entry>();
    e->router = info.recipe == kRouterRecipe;
    if (e->router) {
      e->document = policy_document_of(info).dump();
    }
    fresh.emplace(info.name, std::move(e));
  }
  // Aliases that stand for a collection (an alias may name another alias).
  std::map<std::string, std::string, std::less<>> aliases;
  if (!fresh.empty()) {
    for (const auto& [alias, target] : catalogue_.aliases().all()) {
      auto end = catalogue_.aliases().follow(alias);
      const std::string name = end.ok() && end->has_value() ? **end : target;
      for (const std::string& known : {name, "user." + name}) {
        if (fresh.count(known) != 0) {
          aliases.emplace(alias, known);
          break;
        }
      }
    }
  }
  MutexLock lock(mu_);
  for (auto& [name, e] : fresh) {
    auto old = entries_.find(name);
    if (old == entries_.end() || old->second->document != e->document) {
      continue;
    }
    // Unchanged: keep what was parsed, unless it did not check (a component
    // may have been registered since) or a candidate's size was not known
    // yet (still downloading) while the policy reads what fits.
    const Entry& kept = *old->second;
    const bool size_unknown = kept.policy && kept.policy->reads_fits &&
                              std::any_of(kept.facts.begin(), kept.facts.end(),
                                          [](const CandidateFacts& f) { return f.bytes == 0; });
    if (!kept.invalid && !size_unknown) {
      e = old->second;
    }
  }
  entries_ = std::move(fresh);
  aliases_ = std::move(aliases);
}

void PolicyRouting::refresh_if_stale() {
  const auto age = now_ns() - refreshed_ns_.load(std::memory_order_relaxed);
  if (age < std::chrono::duration_cast<std::chrono::nanoseconds>(kNamesFresh).count()) {
    return;
  }
  // One request reads the catalogue again; the others go on with what is
  // known meanwhile.
  if (refreshing_.exchange(true)) {
    return;
  }
  refresh();
  refreshing_.store(false);
}

void PolicyRouting::forget() {
  refresh();
}

std::optional<PolicyRouting::Collection> PolicyRouting::collection(std::string_view model) {
  refresh_if_stale();
  MutexLock lock(mu_);
  if (entries_.empty()) {
    return std::nullopt;
  }
  if (model.ends_with(kLatestTag)) {
    model.remove_suffix(kLatestTag.size());
  }
  auto it = entries_.find(model);
  if (it == entries_.end() && !model.starts_with("user.")) {
    it = entries_.find("user." + std::string(model));
  }
  if (it == entries_.end()) {
    auto alias = aliases_.find(model);
    if (alias == aliases_.end()) {
      return std::nullopt;
    }
    it = entries_.find(alias->second);
    if (it == entries_.end()) {
      return std::nullopt;
    }
  }
  return Collection{it->first, it->second->router};
}

Result<std::shared_ptr<const PolicyRouting::Entry>> PolicyRouting::entry(
    const std::string& policy) {
  std::shared_ptr<const Entry> known;
  {
    MutexLock lock(mu_);
    auto it = entries_.find(policy);
    if (it == entries_.end()) {
      return Error(ErrorCode::kModelNotFound, "model '" + policy + "' was not found", "model");
    }
    known = it->second;
  }
  if (known->invalid) {
    return *known->invalid;
  }
  if (known->policy) {
    return known;
  }
  // First use since it was registered: parse it (no lock held).
  auto parsed = std::make_shared<Entry>(*known);
  auto policy_doc = nlohmann::json::parse(known->document, nullptr, false);
  auto checked = routing::parse_route_policy(policy_doc, parse_options());
  if (!checked.ok()) {
    parsed->invalid =
        Error(ErrorCode::kInvalidRoutingPolicy,
              "Invalid collection.router routing policy: " + checked.error().message(), "model");
  } else {
    parsed->policy = *checked;
    for (const auto& c : parsed->policy->candidates) {
      parsed->facts.push_back(
          candidate_facts(catalogue_, c, router_.cli_options(), parsed->policy->reads_fits));
    }
  }
  {
    MutexLock lock(mu_);
    auto it = entries_.find(policy);
    if (it != entries_.end() && it->second->document == parsed->document) {
      it->second = parsed;
    }
  }
  if (parsed->invalid) {
    return *parsed->invalid;
  }
  return std::shared_ptr<const Entry>(parsed);
}

routing::RouterState PolicyRouting::state_for(const Entry& e) const {
  if (!e.policy->reads_router) {
    return {};
  }
  auto view = router_.view();
  if (!view) {
    return {};
  }
  return candidate_states(e.facts, *view, e.policy->reads_fits);
}

Result<RoutedRequest> PolicyRouting::route(const std::string& policy, const nlohmann::json& body,
                                           std::uint64_t request_id,
                                           const std::function<bool()>& gone) {
  auto trace = routing::route_trace_requested(body);
  if (!trace.ok()) {
    return std::move(trace).error();
  }
  auto found = entry(policy);
  if (!found.ok()) {
    return std::move(found).error();
  }
  const Entry& e = **found;
  const auto started = Clock::now();
  const routing::RouteInput input = routing::route_input_from_body(body);
  const routing::RouterState state = state_for(e);
  std::optional<ClassifierCalls> calls;
  if (gateway_ != nullptr) {
    calls.emplace(*gateway_, phrases_, gone);
  }
  RoutedRequest routed;
  routed.policy = policy;
  routed.trace = *trace;
  routed.decision =
      routing::decide(*e.policy, input, state, calls ? &*calls : nullptr, routed.trace);
  routed.decide_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  routed.header = routing::route_header(routed.decision);
  routed.object = routing::decision_json(routed.decision, routed.trace,
                                         routed.trace && !state.empty() ? &state : nullptr);
  const bool switched = count(policy, routed.decision, routing::conversation_fingerprint(body));

  telemetry::RouteRecord record;
  record.id = request_id;
  record.policy = policy;
  record.rule = routed.header;
  record.route_to = routed.decision.route_to;
  record.switched = switched;
  record.decide_s = routed.decide_seconds;
  for (const auto& run : routed.decision.classifiers) {
    record.classifiers.push_back({run.id, run.result.ok, run.result.seconds});
  }
  hub_.record_route(record);
  logger("http")->debug("routing policy '{}' -> '{}' ({})", policy, routed.decision.route_to,
                        routed.header);
  return routed;
}

Result<PolicyRouting::Validation> PolicyRouting::validate(const nlohmann::json& document,
                                                          const routing::RouteInput& input,
                                                          const std::function<bool()>& gone) {
  auto policy = routing::parse_route_policy(document, parse_options());
  if (!policy.ok()) {
    return Error(ErrorCode::kInvalidRoutingPolicy,
                 "Invalid routing policy: " + policy.error().message(), "policy");
  }
  Validation v;
  v.policy = *policy;
  Entry e;
  e.policy = v.policy;
  for (const auto& c : v.policy->candidates) {
    e.facts.push_back(candidate_facts(catalogue_, c, router_.cli_options(), v.policy->reads_fits));
  }
  v.state = state_for(e);
  std::optional<ClassifierCalls> calls;
  if (gateway_ != nullptr) {
    calls.emplace(*gateway_, phrases_, gone);
  }
  v.decision = routing::decide(*v.policy, input, v.state, calls ? &*calls : nullptr, true);
  return v;
}

bool PolicyRouting::count(const std::string& policy, const routing::Decision& d,
                          std::uint64_t conversation) {
  MutexLock lock(counts_mu_);
  ++decisions_;
  PolicyCounts& counts = per_policy_[policy];
  ++counts.decisions;
  ++counts.rules[routing::route_header(d)];
  bool switched = false;
  if (auto it = seen_.find(conversation); it != seen_.end()) {
    switched = it->second.route_to != d.route_to;
    it->second.route_to = d.route_to;
    recent_.splice(recent_.end(), recent_, it->second.at);
  } else {
    recent_.push_back(conversation);
    seen_[conversation] = {d.route_to, std::prev(recent_.end())};
    if (recent_.size() > kConversationsKept) {
      seen_.erase(recent_.front());
      recent_.pop_front();
    }
  }
  if (switched) {
    ++switches_;
    ++counts.switches;
  }
  return switched;
}

nlohmann::json PolicyRouting::stats() const {
  MutexLock lock(counts_mu_);
  nlohmann::json policies = nlohmann::json::object();
  for (const auto& [name, c] : per_policy_) {
    policies[name] = {{"decisions", c.decisions}, {"switches", c.switches}, {"rules", c.rules}};
  }
  return {{"routing_decisions_total", decisions_},
          {"routing_switches_total", switches_},
          {"routing_policies", std::move(policies)}};
}

}  // namespace lemon::inference
