#include "lemon/api/lemonade/preset_api.h"

#include <set>

#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"

namespace lemon::api {

namespace {

nlohmann::json preset_json(const PresetEntry& e, const std::set<std::string>& loaded) {
  nlohmann::json j = {{"id", e.preset.id},
                      {"object", "preset"},
                      {"source", e.builtin ? "builtin"
                                 : e.ini   ? "file"
                                           : "user"},
                      {"server", e.server},
                      {"loaded", loaded.contains(e.server)}};
  // Held: a range-for over a temporary's items() would read it after it is freed.
  const nlohmann::ordered_json fields = e.preset.to_json();
  for (const auto& [key, value] : fields.items()) {
    j[key] = value;
  }
  return j;
}

std::set<std::string> loaded_servers(const Router& router) {
  std::set<std::string> loaded;
  for (const auto& s : router.loaded()) {
    loaded.insert(s.model_name);
  }
  return loaded;
}

// The preset as stored, after a create or replace.
void send_stored(net::ResponseWriter& w, int status, const PresetCatalogue& presets,
                 const Router& router, std::string_view id) {
  auto e = presets.find(id);
  send_json(w, status,
            e ? preset_json(*e, loaded_servers(router)) : nlohmann::json{{"id", std::string(id)}});
}

// A preset body as sent to POST or PUT: the file's fields, plus the
// read-only ones GET adds (id, object, source, server, loaded), which are
// ignored so a GET answer can be sent back changed. A different "id" is 400.
Result<Preset> preset_from_body(std::string_view id, nlohmann::json body) {
  if (auto given = body.find("id"); given != body.end()) {
    if (!given->is_string() || given->get<std::string>() != id) {
      return Error(ErrorCode::kInvalidRequest, "'id' does not match the preset named in the path",
                   "id");
    }
  }
  for (const char* read_only : {"id", "object", "source", "server", "loaded"}) {
    body.erase(read_only);
  }
  return parse_preset(id, body);
}

}  // namespace

PresetApi::PresetApi(PresetCatalogue& presets, const Router& router)
    : presets_(presets), router_(router) {}

void PresetApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  routes.route("GET", "presets", RouteAccess::kRead, Scope::kAdmin,
               [this](net::Request&, net::ResponseWriter& w, P) { handle_presets(w); });
  routes.route("POST", "presets", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_preset_create(r, w); });
  routes.route("GET", "presets/{id}", RouteAccess::kRead, Scope::kAdmin,
               [this](net::Request&, net::ResponseWriter& w, P id) { handle_preset(id, w); });
  routes.route(
      "PUT", "presets/{id}", RouteAccess::kJsonPost, Scope::kAdmin,
      [this](net::Request& r, net::ResponseWriter& w, P id) { handle_preset_replace(id, r, w); });
  routes.route(
      "DELETE", "presets/{id}", RouteAccess::kJsonPost, Scope::kAdmin,
      [this](net::Request&, net::ResponseWriter& w, P id) { handle_preset_delete(id, w); });
}

void PresetApi::handle_presets(net::ResponseWriter& w) {
  const auto loaded = loaded_servers(router_);
  nlohmann::json data = nlohmann::json::array();
  for (const auto& e : presets_.list()) {
    data.push_back(preset_json(e, loaded));
  }
  send_json(w, 200, {{"object", "list"}, {"data", std::move(data)}});
}

void PresetApi::handle_preset(std::string_view id, net::ResponseWriter& w) {
  auto e = presets_.find(id);
  if (!e) {
    write_error(w, Error(ErrorCode::kModelNotFound,
                         "preset '" + std::string(id) + "' was not found", "preset"));
    return;
  }
  send_json(w, 200, preset_json(*e, loaded_servers(router_)));
}

void PresetApi::handle_preset_create(net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto id = string_field(*body, "id", true);
  if (wrote_error(w, id)) {
    return;
  }
  auto preset = preset_from_body(*id, std::move(body).value());
  if (wrote_error(w, preset)) {
    return;
  }
  if (wrote_error(w, presets_.create(*preset))) {
    return;
  }
  send_stored(w, 201, presets_, router_, *id);
}

void PresetApi::handle_preset_replace(std::string_view id, net::Request& r,
                                      net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto preset = preset_from_body(id, std::move(body).value());
  if (wrote_error(w, preset)) {
    return;
  }
  if (wrote_error(w, presets_.replace(*preset))) {
    return;
  }
  send_stored(w, 200, presets_, router_, id);
}

void PresetApi::handle_preset_delete(std::string_view id, net::ResponseWriter& w) {
  if (wrote_error(w, presets_.remove(id))) {
    return;
  }
  send_json(w, 200, {{"id", std::string(id)}, {"object", "preset"}, {"deleted", true}});
}

}  // namespace lemon::api
