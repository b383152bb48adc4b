// ModelStoreApi: the model store's routes (issue #7): POST pull (download a
// catalogue model; register a user.* model from its checkpoint and recipe;
// import a local folder) and POST delete (through the ModelProvisioner, the
// one delete path). Streaming pulls speak Lemonade 9.4.1's SSE events.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include "lemon/http/api_routes.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/model_store.h"
#include "lemon/net/server.h"

namespace lemon::api {

class ModelStoreApi {
 public:
  ModelStoreApi(ModelCatalogue& catalogue, ModelStore& store,
                inference::ModelProvisioner& provisioner);

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_pull(net::Request& r, net::ResponseWriter& w);
  void handle_delete(net::Request& r, net::ResponseWriter& w);

  ModelCatalogue& catalogue_;
  ModelStore& store_;
  inference::ModelProvisioner& provisioner_;
};

}  // namespace lemon::api
