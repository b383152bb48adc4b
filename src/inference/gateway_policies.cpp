// InferenceGateway's routing policies: a request, or a session, that names
// a collection is sent to the candidate its policy chooses (PolicyRouting),
// or refused when the collection is an omni or the route is not one a
// policy serves.
#include "lemon/inference/inference_gateway.h"

namespace lemon::inference {

namespace {

Error omni_refusal(const std::string& name) {
  return Error(ErrorCode::kUnsupportedOperation,
               "'" + name +
                   "' is a collection.omni: its chat (a tool loop over its components) is not "
                   "supported yet; call its components by name",
               "model");
}

}  // namespace

Result<std::string> InferenceGateway::session_model(const std::string& model,
                                                    const nlohmann::json& body,
                                                    const std::function<bool()>& gone) {
  auto collection = policies_ != nullptr ? policies_->collection(model) : std::nullopt;
  if (!collection) {
    return model;
  }
  if (!collection->router) {
    return omni_refusal(collection->name);
  }
  auto routed = policies_->route(collection->name, body,
                                 next_request_id_.fetch_add(1, std::memory_order_relaxed), gone);
  if (!routed.ok()) {
    return std::move(routed).error();
  }
  return routed->decision.route_to;
}

std::optional<Error> InferenceGateway::route_collection(InferenceRequest& req,
                                                        const std::function<bool()>& gone) {
  auto collection = policies_->collection(req.model);
  if (!collection) {
    return std::nullopt;
  }
  if (!collection->router) {
    return omni_refusal(collection->name);
  }
  const bool routes = req.route == ApiRoute::kChatCompletions ||
                      req.route == ApiRoute::kCompletions || req.route == ApiRoute::kResponses;
  if (!routes || req.json == nullptr) {
    return Error(ErrorCode::kUnsupportedOperation,
                 "'" + collection->name + "' is a routing policy: it serves " +
                     "chat/completions, completions and responses, not " +
                     std::string(api_route_name(req.route)),
                 "model");
  }
  auto routed = policies_->route(collection->name, *req.json, req.id, gone);
  if (!routed.ok()) {
    return std::move(routed).error();
  }
  req.requested_model = req.model;
  req.model = routed->decision.route_to;
  (*req.json)["model"] = req.model;
  req.json->erase("route_trace");
  req.body_changed = true;
  req.routed = std::move(*routed);
  return std::nullopt;
}

}  // namespace lemon::inference
