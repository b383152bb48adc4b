// AliasApi: Lemonade 11's model aliases (aliases.json, models/alias_book.h):
// GET /internal/aliases lists them, POST sets one ({"alias", "target"}, or
// "model" for "target"), DELETE /internal/aliases/{alias} removes one. Admin
// scope, at the root and under every API prefix.
//
// A change is told at once to the routing policies (an alias may name a
// collection).
//
// Ownership: holds a reference to the catalogue, which outlives it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include "lemon/http/api_routes.h"
#include "lemon/inference/policy_routing.h"
#include "lemon/models/catalogue.h"

namespace lemon::api {

class AliasApi {
 public:
  explicit AliasApi(ModelCatalogue& catalogue) : catalogue_(catalogue) {}

  // Set once, before the server serves; it outlives the room.
  void use_policies(inference::PolicyRouting* policies) { policies_ = policies; }

  void register_routes(http::ApiRoutes& routes);

 private:
  void changed() const {
    if (policies_ != nullptr) {
      policies_->forget();
    }
  }

  ModelCatalogue& catalogue_;
  inference::PolicyRouting* policies_ = nullptr;
};

}  // namespace lemon::api
