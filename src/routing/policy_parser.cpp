// The policy document's outer levels: root, version, recipe, components,
// the routing block, candidates, default_model, the router sugar and
// routing.state. Classifiers are checked in classifier_parser.cpp, rules
// and match expressions in match_parser.cpp.
#include "lemon/routing/route_policy.h"

#include <algorithm>

#include "parse_support.h"

namespace lemon::routing {
namespace detail {

void fail(const std::string& message) {
  throw PolicyError(message);
}

std::string at_index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

void require_keys(const json& value, std::initializer_list<std::string_view> accepted,
                  const std::string& path) {
  if (!value.is_object()) {
    fail(path + " must be an object");
  }
  for (const auto& item : value.items()) {
    if (std::find(accepted.begin(), accepted.end(), item.key()) == accepted.end()) {
      fail(path + " contains unknown key '" + item.key() + "'");
    }
  }
}

const json& required(const json& value, const char* key, const std::string& path) {
  auto it = value.find(key);
  if (it == value.end()) {
    fail(path + " is missing required key '" + key + "'");
  }
  return *it;
}

std::string required_string(const json& value, const char* key, const std::string& path) {
  const json& field = required(value, key, path);
  if (!field.is_string() || field.get_ref<const std::string&>().empty()) {
    fail(path + "." + key + " must be a non-empty string");
  }
  return field.get<std::string>();
}

std::string optional_string(const json& value, const char* key, const std::string& path) {
  auto it = value.find(key);
  if (it == value.end()) {
    return {};
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    fail(path + "." + key + " must be a non-empty string");
  }
  return it->get<std::string>();
}

std::vector<std::string> string_array(const json& value, const std::string& path) {
  if (!value.is_array() || value.empty()) {
    fail(path + " must be a non-empty array");
  }
  std::vector<std::string> out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string() || value[i].get_ref<const std::string&>().empty()) {
      fail(at_index(path, i) + " must be a non-empty string");
    }
    out.push_back(value[i].get<std::string>());
  }
  return out;
}

std::string NameRules::resolve(const std::string& original, const std::string& path) const {
  if (!options.resolve) {
    return original;
  }
  auto resolved = options.resolve(original);
  if (!resolved || resolved->empty()) {
    fail(path + " references unknown component '" + original + "'");
  }
  return *resolved;
}

void NameRules::require_declared(const std::string& resolved, const std::string& original,
                                 const std::string& path) const {
  if (options.require_declared_components && declared.count(resolved) == 0) {
    fail(path + " references component '" + original +
         "' that is not declared in collection.components");
  }
}

}  // namespace detail

namespace {

using detail::at_index;
using detail::fail;
using detail::json;
using detail::NameRules;

void check_version(const json& doc) {
  const std::string version = detail::required_string(doc, "version", "collection");
  const std::string major = version.substr(0, version.find('.'));
  if (major != "1") {
    fail("Unsupported collection.router schema major '" + major + "' from version '" + version +
         "'; supported major is '1'");
  }
  if (version != "1") {
    fail("Unsupported collection.router schema version '" + version +
         "'; this parser implements version '1'");
  }
}

void parse_components(const json& doc, NameRules& names, RoutePolicy& policy) {
  const bool required = names.options.require_declared_components;
  auto it = doc.find("components");
  if (it == doc.end()) {
    if (required) {
      fail("collection.router requires a non-empty components array");
    }
    return;
  }
  if (!it->is_array() || it->empty()) {
    if (required) {
      fail("collection.components must be a non-empty array");
    }
    return;
  }
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& item = (*it)[i];
    const std::string path = at_index("collection.components", i);
    if (!item.is_string() || item.get_ref<const std::string&>().empty()) {
      fail(path + " must be a non-empty string");
    }
    std::string resolved = names.resolve(item.get<std::string>(), path);
    if (names.declared.insert(resolved).second) {
      policy.components.push_back(std::move(resolved));
    }
  }
}

void parse_candidates(const json& routing, const NameRules& names, RoutePolicy& policy) {
  const json& value = detail::required(routing, "candidates", "routing");
  if (!value.is_array() || value.empty()) {
    fail("routing.candidates must be a non-empty array");
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string path = at_index("routing.candidates", i);
    if (!value[i].is_string() || value[i].get_ref<const std::string&>().empty()) {
      fail(path + " must be a non-empty string");
    }
    const std::string original = value[i].get<std::string>();
    std::string resolved = names.component(original, path);
    if (std::find(policy.candidates.begin(), policy.candidates.end(), resolved) !=
        policy.candidates.end()) {
      std::string message = path;
      message += " duplicates candidate '" + original + "'";
      fail(message);
    }
    policy.candidates.push_back(std::move(resolved));
  }
}

void parse_default(const json& routing, const NameRules& names, RoutePolicy& policy) {
  const std::string original = detail::required_string(routing, "default_model", "routing");
  policy.default_model = names.component(original, "routing.default_model");
  if (std::find(policy.candidates.begin(), policy.candidates.end(), policy.default_model) ==
      policy.candidates.end()) {
    fail("routing.default_model '" + original + "' must be listed in routing.candidates");
  }
}

// routing.router: one llm classifier over the candidates as written, and
// one rule per candidate that takes its label.
json desugar_router(const json& routing) {
  const json& router = routing.at("router");
  detail::require_keys(router, {"type", "model", "prompt"}, "routing.router");
  if (detail::required_string(router, "type", "routing.router") != "llm") {
    fail("routing.router.type must be 'llm'");
  }
  if (routing.contains("classifiers") || routing.contains("rules")) {
    fail("routing.router cannot be combined with routing.classifiers or routing.rules");
  }
  detail::required_string(router, "model", "routing.router");
  detail::required_string(router, "prompt", "routing.router");
  json out = routing;
  out.erase("router");
  const json& authored = routing.at("candidates");
  out["classifiers"] = json::array({{{"id", "__router"},
                                     {"type", "llm"},
                                     {"model", router.at("model")},
                                     {"prompt", router.at("prompt")},
                                     {"labels", authored}}});
  json rules = json::array();
  for (std::size_t i = 0; i < authored.size(); ++i) {
    rules.push_back(
        {{"id", "__route_" + std::to_string(i)},
         {"match", {{"classifier", "__router"}, {"label", authored[i]}, {"min_score", 1.0}}},
         {"route_to", authored[i]}});
  }
  out["rules"] = std::move(rules);
  return out;
}

Preference parse_preference(const json& value, const std::string& path) {
  if (value.is_string()) {
    if (auto p = value_named(detail::kPreferenceNames, value.get_ref<const std::string&>())) {
      return *p;
    }
  }
  fail(path + " must be one of loaded, shortest_queue, smallest");
}

void parse_state(const json& routing, RoutePolicy& policy) {
  auto it = routing.find("state");
  if (it == routing.end()) {
    return;
  }
  detail::require_keys(*it, {"fits", "queue_below", "prefer"}, "routing.state");
  StateRules& state = policy.state;
  if (auto fits = it->find("fits"); fits != it->end()) {
    if (!fits->is_boolean()) {
      fail("routing.state.fits must be a boolean");
    }
    state.fits = fits->get<bool>();
  }
  if (auto queue = it->find("queue_below"); queue != it->end()) {
    if (!queue->is_number_integer() || queue->get<std::int64_t>() < 1) {
      fail("routing.state.queue_below must be a positive integer");
    }
    state.queue_below = queue->get<std::int64_t>();
  }
  if (auto prefer = it->find("prefer"); prefer != it->end()) {
    if (!prefer->is_array() || prefer->empty()) {
      fail("routing.state.prefer must be a non-empty array");
    }
    for (std::size_t i = 0; i < prefer->size(); ++i) {
      const std::string path = at_index("routing.state.prefer", i);
      const Preference p = parse_preference((*prefer)[i], path);
      if (std::find(state.prefer.begin(), state.prefer.end(), p) != state.prefer.end()) {
        fail(path + " repeats '" + preference_name(p) + "'");
      }
      state.prefer.push_back(p);
    }
  }
  policy.reads_fits = policy.reads_fits || state.fits;
  policy.reads_router = policy.reads_router || !state.empty();
}

std::shared_ptr<const RoutePolicy> parse_document(const json& doc, const ParseOptions& options) {
  detail::require_keys(doc, {"version", "model_name", "recipe", "components", "models", "routing"},
                       "collection");
  check_version(doc);
  if (detail::required_string(doc, "recipe", "collection") != "collection.router") {
    fail("collection.recipe must be 'collection.router' for a routing policy");
  }
  auto policy = std::make_shared<RoutePolicy>();
  NameRules names{options, {}};
  parse_components(doc, names, *policy);
  const json& routing = detail::required(doc, "routing", "collection");
  detail::require_keys(routing,
                       {"candidates", "default_model", "router", "classifiers", "rules", "state"},
                       "routing");
  parse_candidates(routing, names, *policy);
  parse_default(routing, names, *policy);
  json core = routing.contains("router") ? desugar_router(routing) : routing;
  detail::parse_classifiers(core, names, *policy);
  detail::parse_rules(core, names, *policy);
  parse_state(core, *policy);
  policy->normalized_routing = std::move(core);
  return policy;
}

}  // namespace

const char* classifier_type_name(ClassifierType type) {
  return name_of(detail::kClassifierTypeNames, type, "llm");
}

const char* preference_name(Preference preference) {
  return name_of(detail::kPreferenceNames, preference, "loaded");
}

const Classifier* RoutePolicy::classifier(std::string_view id) const {
  for (const auto& c : classifiers) {
    if (c.id == id) {
      return &c;
    }
  }
  return nullptr;
}

Result<std::shared_ptr<const RoutePolicy>> parse_route_policy(const nlohmann::json& collection,
                                                              const ParseOptions& options) {
  try {
    return parse_document(collection, options);
  } catch (const detail::PolicyError& e) {
    return Error(ErrorCode::kInvalidRoutingPolicy, e.what(), "routing");
  } catch (const std::regex_error& e) {
    return Error(ErrorCode::kInvalidRoutingPolicy,
                 std::string("regex pattern is not valid ECMAScript: ") + e.what(), "routing");
  }
}

nlohmann::json policy_document(const nlohmann::json& pull_body) {
  nlohmann::json doc = nlohmann::json::object();
  if (!pull_body.is_object()) {
    return doc;
  }
  for (const char* key : {"version", "model_name", "recipe", "components", "models", "routing"}) {
    if (auto it = pull_body.find(key); it != pull_body.end()) {
      doc[key] = *it;
    }
  }
  if (!doc.contains("model_name") && pull_body.contains("model")) {
    doc["model_name"] = pull_body["model"];
  }
  return doc;
}

}  // namespace lemon::routing
