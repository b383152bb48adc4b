#include "lemon/api/lemonade/alias_api.h"

#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"

namespace lemon::api {

void AliasApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  const auto list = [this](net::Request&, net::ResponseWriter& w, P) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [alias, target] : catalogue_.aliases().all()) {
      auto model = catalogue_.resolve(alias);
      out.push_back(
          {{"alias", alias},
           {"target", target},
           {"model", model.ok() ? nlohmann::json(model->name) : nlohmann::json(nullptr)},
           {"downloaded", model.ok() && model->downloaded},
           {"recipe", model.ok() ? nlohmann::json(model->recipe) : nlohmann::json(nullptr)}});
    }
    send_json(w, 200, {{"aliases", std::move(out)}});
  };
  const auto set = [this](net::Request& r, net::ResponseWriter& w, P) {
    auto body = http::parse_json_object(r.body);
    if (wrote_error(w, body)) {
      return;
    }
    auto text = [&body](const char* field) {
      auto it = body->find(field);
      return it != body->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string alias = text("alias");
    const std::string target = body->contains("target") ? text("target") : text("model");
    if (wrote_error(w, catalogue_.aliases().set(alias, target))) {
      return;
    }
    changed();
    send_json(w, 200, {{"status", "ok"}, {"alias", alias}, {"target", target}});
  };
  const auto remove = [this](net::Request&, net::ResponseWriter& w, P id) {
    const std::string alias = net::url_decode(id, false);
    if (wrote_error(w, catalogue_.aliases().remove(alias))) {
      return;
    }
    changed();
    send_json(w, 200, {{"status", "deleted"}, {"alias", alias}});
  };
  routes.root("GET", "/internal/aliases", RouteAccess::kRead, Scope::kAdmin, list);
  routes.route("GET", "internal/aliases", RouteAccess::kRead, Scope::kAdmin, list);
  routes.root("POST", "/internal/aliases", RouteAccess::kJsonPost, Scope::kAdmin, set);
  routes.route("POST", "internal/aliases", RouteAccess::kJsonPost, Scope::kAdmin, set);
  routes.root("DELETE", "/internal/aliases/{id}", RouteAccess::kRead, Scope::kAdmin, remove);
  routes.route("DELETE", "internal/aliases/{id}", RouteAccess::kRead, Scope::kAdmin, remove);
}

}  // namespace lemon::api
