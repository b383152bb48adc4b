// POST /pull for Lemonade 11's collections: a collection.router (its
// policy is the pull's body) or a collection.omni, registered like a user
// model once every check passes, then its components downloaded.
#include "lemon/api/lemonade/model_store_api.h"
#include "lemon/http/error_response.h"
#include "lemon/models/collection_registration.h"
#include "lemon/routing/route_policy.h"
#include "progress_response.h"

namespace lemon::api {

using http::write_error;

void ModelStoreApi::register_collection(const std::string& name, const nlohmann::json& body,
                                        bool stream, net::ResponseWriter& w) {
  auto reg = parse_collection_registration(
      name, body, [this](std::string_view n) { return catalogue_.find(n); });
  if (!reg.ok()) {
    write_error(w, reg.error());
    return;
  }
  // A component may not become a collection (collections do not nest).
  if (auto users = collections_using(catalogue_.collections(), name); !users.empty()) {
    write_error(w, Error(ErrorCode::kModelInUse,
                         "'" + name + "' is a component of '" + users.front() +
                             "': a collection cannot be registered under its name",
                         "model_name"));
    return;
  }
  if (reg->entry["recipe"] == kRouterRecipe) {
    // The policy names components as the client wrote them; they resolve
    // to the names the catalogue knows, as the entry's components do.
    routing::ParseOptions options = inference::catalogue_parse_options(catalogue_);
    auto policy = routing::parse_route_policy(routing::policy_document(body), options);
    if (!policy.ok()) {
      write_error(w, Error(ErrorCode::kInvalidRoutingPolicy,
                           "Invalid collection.router routing policy: " + policy.error().message(),
                           "routing"));
      return;
    }
  }
  if (Status saved = catalogue_.put_user_model(reg->key, reg->entry); !saved.ok()) {
    write_error(w, saved.error());
    return;
  }
  if (policies_ != nullptr) {
    policies_->forget();
  }
  auto info = catalogue_.find(name);
  if (!info) {
    write_error(w, Error(ErrorCode::kInternal, "'" + name + "' did not read back as registered"));
    return;
  }
  pull_components(*info, stream, w);
}

void ModelStoreApi::pull_components(const ModelInfo& collection, bool stream,
                                    net::ResponseWriter& w) {
  const std::vector<std::string> components = collection.components;
  respond_when_done(w, stream,
                    [this, &components](download::FollowHooks& hooks) -> Status {
                      for (const auto& component : components) {
                        auto resolved = catalogue_.resolve(component);
                        if (!resolved.ok()) {
                          return std::move(resolved).error();
                        }
                        if (resolved->downloaded) {
                          continue;
                        }
                        auto download = store_.download(component);
                        if (!download.ok()) {
                          return std::move(download).error();
                        }
                        if (Status done = store_.wait(*download, hooks); !done.ok()) {
                          return done;
                        }
                      }
                      return ok_status();
                    },
                    {{"status", "success"}, {"model_name", collection.name}});
}

}  // namespace lemon::api
