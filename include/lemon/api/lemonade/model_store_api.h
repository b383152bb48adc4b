// ModelStoreApi: the model store's routes: POST pull (download a catalogue
// model; register a user.* model from its checkpoint and recipe; import a
// local folder; register a collection, Lemonade 11's collection.router with
// its policy or collection.omni, and download its components) and POST delete (through the
// ModelProvisioner, the one delete path). Streaming pulls speak Lemonade 9.4.1's SSE events; a pull
// with "stream": true and "subscribe": false (Lemonade 11) is a download
// the router owns, answered with its snapshot at once and listed by GET
// downloads, paused, cancelled or removed by POST downloads/control. GET
// registry/search, GET pull/variants and POST models/check-updates ask the
// hub (models/hub_registry.h).
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include <string>

#include "lemon/http/api_routes.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/inference/policy_routing.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/download_jobs.h"
#include "lemon/models/hub_registry.h"
#include "lemon/models/model_store.h"
#include "lemon/net/server.h"

namespace lemon::api {

class ModelStoreApi {
 public:
  // `default_source`: the registry asked when a request names none
  // (LemonadeSettings::default_model_source).
  ModelStoreApi(ModelCatalogue& catalogue, ModelStore& store,
                inference::ModelProvisioner& provisioner,
                std::string default_source = "huggingface")
      : catalogue_(catalogue),
        store_(store),
        provisioner_(provisioner),
        default_source_(std::move(default_source)),
        jobs_(store),
        registry_(catalogue, store.hub()) {}

  void register_routes(http::ApiRoutes& routes);
  // Collections registered or deleted here are told to `policies` at once.
  // Set once, before the server serves.
  void use_policies(inference::PolicyRouting* policies) { policies_ = policies; }

 private:
  void handle_pull(net::Request& r, net::ResponseWriter& w);
  void handle_delete(net::Request& r, net::ResponseWriter& w);
  // A collection's registration (collection_pull.cpp): checked (a router's
  // policy too), saved, then its components downloaded.
  void register_collection(const std::string& name, const nlohmann::json& body, bool stream,
                           net::ResponseWriter& w);
  // Downloads the components of `collection` that are not downloaded.
  void pull_components(const ModelInfo& collection, bool stream, net::ResponseWriter& w);

  ModelCatalogue& catalogue_;
  ModelStore& store_;
  inference::ModelProvisioner& provisioner_;
  std::string default_source_;
  DownloadJobs jobs_;     // pulls the router owns (GET downloads)
  HubRegistry registry_;  // registry/search, pull/variants, models/check-updates
  inference::PolicyRouting* policies_ = nullptr;
};

}  // namespace lemon::api
