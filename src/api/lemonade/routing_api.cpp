#include "lemon/api/lemonade/routing_api.h"

#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/json_request.h"

namespace lemon::api {

using http::RouteAccess;
using http::Scope;
using http::send_json;
using http::write_error;

namespace {

Error invalid(const std::string& message, const char* param) {
  return Error(ErrorCode::kInvalidRequest, message, param);
}

// The sample request of a validate body, checked in Lemonade's order.
Result<routing::RouteInput> sample_request(const nlohmann::json& body) {
  routing::RouteInput input;
  if (auto it = body.find("prompt"); it != body.end()) {
    if (!it->is_string()) {
      return invalid("'prompt' must be a string", "prompt");
    }
    input.text = it->get<std::string>();
  }
  for (const char* flag : {"has_images", "has_tools"}) {
    if (auto it = body.find(flag); it != body.end()) {
      if (!it->is_boolean()) {
        return invalid(std::string("'") + flag + "' must be a boolean", flag);
      }
      (std::string_view(flag) == "has_images" ? input.has_images : input.has_tools) =
          it->get<bool>();
    }
  }
  if (auto it = body.find("metadata"); it != body.end()) {
    if (!it->is_object()) {
      return invalid("'metadata' must be a JSON object of string values", "metadata");
    }
    for (const auto& item : it->items()) {
      if (!item.value().is_string()) {
        return invalid("'metadata' value for key '" + item.key() + "' must be a string",
                       "metadata");
      }
      input.metadata[item.key()] = item.value().get<std::string>();
    }
  }
  return input;
}

}  // namespace

RoutingApi::RoutingApi(inference::PolicyRouting& policies) : policies_(policies) {}

void RoutingApi::register_routes(http::ApiRoutes& routes) {
  routes.route(
      "POST", "routing/validate", RouteAccess::kJsonPost, Scope::kInference,
      [this](net::Request& r, net::ResponseWriter& w, std::string_view) { handle_validate(r, w); });
}

void RoutingApi::handle_validate(net::Request& r, net::ResponseWriter& w) {
  if (r.body.empty()) {
    write_error(w, invalid("Request body is required but was empty", ""));
    return;
  }
  auto body = http::parse_json_object(r.body);
  if (!body.ok()) {
    write_error(w, body.error());
    return;
  }
  auto policy = body->find("policy");
  if (policy == body->end() || !policy->is_object()) {
    write_error(w, invalid("'policy' must be a JSON object", "policy"));
    return;
  }
  auto input = sample_request(*body);
  if (!input.ok()) {
    write_error(w, input.error());
    return;
  }
  // Its classifiers run on its components: a key whose list of models
  // leaves one out may not have them asked.
  if (auto components = policy->find("components");
      components != policy->end() && components->is_array()) {
    for (const auto& component : *components) {
      if (!component.is_string()) {
        continue;  // the policy's check names it
      }
      if (auto refused =
              http::refuse_model(http::caller_key(r), component.get_ref<const std::string&>())) {
        write_error(w, *refused);
        return;
      }
    }
  }
  auto checked = policies_.validate(*policy, *input, [&w] { return !w.client_connected(); });
  if (!checked.ok()) {
    write_error(w, checked.error());
    return;
  }
  nlohmann::json normalized = *policy;
  normalized["routing"] = checked->policy->normalized_routing;
  send_json(
      w, 200,
      {{"decision", routing::decision_json(checked->decision, true,
                                           checked->state.empty() ? nullptr : &checked->state)},
       {"normalized_policy", std::move(normalized)}});
}

}  // namespace lemon::api
