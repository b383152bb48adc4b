// RoutingApi: POST routing/validate (Lemonade 11's route, under every API
// prefix): a routing policy checked and a sample request decided without
// serving it. The body: {"policy": the collection document, "prompt"?,
// "has_images"?, "has_tools"?, "metadata"?: {string: string}}, checked in
// that order. The policy's components must be registered models (names
// resolve as a registration's do), its candidates, default_model, route_to
// and classifier models declared among them. The answer: {"decision": the
// decision with its trace (and, ours, the classifiers' scores and times and
// the candidates' state), "normalized_policy": the policy with `routing`
// in the core form the engine runs (the router sugar desugared)}.
// Classifiers run live, through the router's models; nothing is counted.
// A caller whose API key lists models gets 403 for a component it leaves
// out.
//
// Ownership: holds a reference to the PolicyRouting, which outlives it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include "lemon/http/api_routes.h"
#include "lemon/inference/policy_routing.h"
#include "lemon/net/server.h"

namespace lemon::api {

class RoutingApi {
 public:
  explicit RoutingApi(inference::PolicyRouting& policies);

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_validate(net::Request& r, net::ResponseWriter& w);

  inference::PolicyRouting& policies_;
};

}  // namespace lemon::api
