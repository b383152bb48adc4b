// POST /load of a collection (Lemonade 11): a collection.router is virtual,
// its candidates load as requests choose them; a collection.omni loads
// every component.
#include "lemon/api/lemonade/management_api.h"
#include "lemon/http/error_response.h"

namespace lemon::api {

void ManagementApi::load_collection(const ModelInfo& info, net::ResponseWriter& w) {
  if (info.recipe == kOmniRecipe) {
    WaitHooks hooks;
    hooks.cancelled = [&w] { return !w.client_connected(); };
    for (const auto& component : info.components) {
      Status loaded = provisioner_.load(component, RecipeOptions{}, hooks);
      if (!loaded.ok()) {
        if (loaded.error().code() != ErrorCode::kCancelled) {
          http::write_error(w, loaded.error());
        }
        return;
      }
    }
  }
  http::send_json(w, 200,
                  {{"status", "success"},
                   {"message", "Loaded model: " + info.name},
                   {"model_name", info.name},
                   {"recipe", info.recipe}});
}

}  // namespace lemon::api
