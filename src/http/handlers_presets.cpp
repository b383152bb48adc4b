// Presets (issue #14 §1): the CRUD routes, POST /load {"preset": id}, and
// the request-time half of a preset (its server name and its defaults),
// applied to inference requests before the router is asked for a lease.
#include <set>

#include "lemon/http/api_server.h"
#include "lemon/http/error_response.h"
#include "lemon/http/inference_proxy.h"
#include "lemon/http/json_request.h"

namespace lemon::http {
namespace {

nlohmann::json preset_json(const PresetEntry& e, const std::set<std::string>& loaded) {
  nlohmann::json j = {{"id", e.preset.id},
                      {"object", "preset"},
                      {"source", e.builtin ? "builtin" : "user"},
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

void ApiServer::register_preset_routes() {
  using P = std::string_view;
  route("GET", "presets", RouteAccess::kRead,
        [this](net::Request&, net::ResponseWriter& w, P) { handle_presets(w); });
  route("POST", "presets", RouteAccess::kJsonPost,
        [this](net::Request& r, net::ResponseWriter& w, P) { handle_preset_create(r, w); });
  route("GET", "presets/{id}", RouteAccess::kRead,
        [this](net::Request&, net::ResponseWriter& w, P id) { handle_preset(id, w); });
  route("PUT", "presets/{id}", RouteAccess::kJsonPost,
        [this](net::Request& r, net::ResponseWriter& w, P id) { handle_preset_replace(id, r, w); });
  route("DELETE", "presets/{id}", RouteAccess::kJsonPost,
        [this](net::Request&, net::ResponseWriter& w, P id) { handle_preset_delete(id, w); });
}

void ApiServer::handle_presets(net::ResponseWriter& w) {
  const auto loaded = loaded_servers(router_);
  nlohmann::json data = nlohmann::json::array();
  for (const auto& e : presets_.list()) {
    data.push_back(preset_json(e, loaded));
  }
  send_json(w, 200, {{"object", "list"}, {"data", std::move(data)}});
}

void ApiServer::handle_preset(std::string_view id, net::ResponseWriter& w) {
  auto e = presets_.find(id);
  if (!e) {
    write_error(w, Error(ErrorCode::kModelNotFound,
                         "preset '" + std::string(id) + "' was not found", "preset"));
    return;
  }
  send_json(w, 200, preset_json(*e, loaded_servers(router_)));
}

void ApiServer::handle_preset_create(net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    write_error(w, body.error());
    return;
  }
  auto id = string_field(*body, "id", true);
  if (!id.ok()) {
    write_error(w, id.error());
    return;
  }
  auto preset = preset_from_body(*id, std::move(body).value());
  if (!preset.ok()) {
    write_error(w, preset.error());
    return;
  }
  if (Status created = presets_.create(*preset); !created.ok()) {
    write_error(w, created.error());
    return;
  }
  send_stored(w, 201, presets_, router_, *id);
}

void ApiServer::handle_preset_replace(std::string_view id, net::Request& r,
                                      net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    write_error(w, body.error());
    return;
  }
  auto preset = preset_from_body(id, std::move(body).value());
  if (!preset.ok()) {
    write_error(w, preset.error());
    return;
  }
  if (Status replaced = presets_.replace(*preset); !replaced.ok()) {
    write_error(w, replaced.error());
    return;
  }
  send_stored(w, 200, presets_, router_, id);
}

void ApiServer::handle_preset_delete(std::string_view id, net::ResponseWriter& w) {
  if (Status removed = presets_.remove(id); !removed.ok()) {
    write_error(w, removed.error());
    return;
  }
  send_json(w, 200, {{"id", std::string(id)}, {"object", "preset"}, {"deleted", true}});
}

void ApiServer::handle_load_preset(const nlohmann::json& body, net::ResponseWriter& w) {
  auto id = string_field(body, "preset", true);
  if (!id.ok()) {
    write_error(w, id.error());
    return;
  }
  for (const auto& [key, value] : body.items()) {
    if (key != "preset" && !(key == "save_options" && value == false)) {
      write_error(w, Error(ErrorCode::kInvalidRequest,
                           "'" + key +
                               "' cannot be used with 'preset': the preset names its model and "
                               "load options",
                           key));
      return;
    }
  }
  auto entry = presets_.find(*id);
  if (!entry) {
    write_error(w,
                Error(ErrorCode::kModelNotFound, "preset '" + *id + "' was not found", "preset"));
    return;
  }
  const std::string& server = entry->server;
  WaitHooks hooks;
  hooks.cancelled = [&w] { return !w.client_connected(); };
  Status loaded = provisioner_.load(server, RecipeOptions{}, hooks);
  if (!loaded.ok()) {
    if (loaded.error().code() != ErrorCode::kCancelled) {
      write_error(w, loaded.error());
    }
    return;
  }
  send_json(w, 200,
            {{"status", "success"},
             {"message", "Loaded preset: " + *id},
             {"preset", *id},
             {"model_name", server}});
}

}  // namespace lemon::http
