// ModelOptionsApi: Lemonade 11's per-model routes beside GET models/{id}:
//   GET|POST|DELETE models/{id}/options: a model's saved load options
//     (recipe_options.json), what a load without options would use, the
//     defaults, and where each value comes from ("saved", "config": the
//     router's flags, LEMONADE_* and config.json, or "default"); POST merges
//     keys into the saved entry (null, "" or -1 forgets one; "dry_run": true
//     previews), DELETE forgets the entry. Saving never loads or reloads.
//   POST models/register: a user.* model registered without a download.
//   GET models/{id}/files: the model's files by role, their sizes and
//     whether they are on disk (`include_paths=true` adds the paths).
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include "lemon/http/api_routes.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/models/catalogue.h"
#include "lemon/net/server.h"
#include "lemon/router/router.h"

namespace lemon::api {

class ModelOptionsApi {
 public:
  ModelOptionsApi(ModelCatalogue& catalogue, const Router& router,
                  inference::ModelProvisioner& provisioner)
      : catalogue_(catalogue), router_(router), provisioner_(provisioner) {}

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_options(const net::Request& r, std::string_view id, net::ResponseWriter& w);
  void handle_register(net::Request& r, net::ResponseWriter& w);
  void handle_files(const net::Request& r, std::string_view id, net::ResponseWriter& w);
  // The options view of `info`, with `saved` as its saved entry.
  nlohmann::json options_view(const std::string& asked, const ModelInfo& info,
                              const nlohmann::json& saved) const;

  ModelCatalogue& catalogue_;
  const Router& router_;
  inference::ModelProvisioner& provisioner_;
};

}  // namespace lemon::api
