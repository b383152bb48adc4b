#include "lemon/api/lemonade/model_options_api.h"

#include <algorithm>
#include <filesystem>

#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/models/model_names.h"
#include "lemon/models/user_registration.h"

namespace lemon::api {

namespace {

namespace fs = std::filesystem;

// Keys recipe_options.json holds beside the recipe's load options.
bool is_standing_key(std::string_view key) {
  return key == "pinned" || key == "priority";
}

// What forgets a saved key: null, "", or -1 (Lemonade's sentinels).
bool forgets(const nlohmann::json& value) {
  return value.is_null() || (value.is_string() && value.get<std::string>().empty()) ||
         (value.is_number_integer() && value.get<long long>() == -1);
}

std::uint64_t size_on_disk(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    return fs::file_size(path, ec);
  }
  std::uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code sec;
    if (it->is_regular_file(sec)) {
      total += it->file_size(sec);
    }
  }
  return total;
}

}  // namespace

void ModelOptionsApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  const auto options = [this](net::Request& r, net::ResponseWriter& w, P id) {
    handle_options(r, id, w);
  };
  routes.route("GET", "models/{id}/options", RouteAccess::kRead, Scope::kRead, options);
  routes.route("POST", "models/{id}/options", RouteAccess::kJsonPost, Scope::kAdmin, options);
  routes.route("DELETE", "models/{id}/options", RouteAccess::kRead, Scope::kAdmin, options);
  routes.route("GET", "models/{id}/files", RouteAccess::kRead, Scope::kInferenceOrRead,
               [this](net::Request& r, net::ResponseWriter& w, P id) { handle_files(r, id, w); });
  routes.route("POST", "models/register", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_register(r, w); });
}

nlohmann::json ModelOptionsApi::options_view(const std::string& asked, const ModelInfo& info,
                                             const nlohmann::json& saved) const {
  auto saved_options = RecipeOptions::from_json(info.recipe, saved);
  const RecipeOptions config = router_.cli_options().restricted_to(info.recipe);
  const RecipeOptions defaults = RecipeOptions::defaults().restricted_to(info.recipe);
  const RecipeOptions layered = saved_options.ok()
                                    ? saved_options->inherit(config).inherit(defaults)
                                    : config.inherit(defaults);
  nlohmann::json effective = layered.to_json();
  nlohmann::json sources = nlohmann::json::object();
  // The router's layer holds every key (its defaults included): a value
  // it has as the built-in default is reported as that.
  for (const auto& [key, value] : effective.items()) {
    const bool from_config =
        config.has(key) && (!defaults.has(key) || config.raw()[key] != defaults.raw()[key]);
    sources[key] = saved_options.ok() && saved_options->has(key) ? "saved"
                   : from_config                                 ? "config"
                                                                 : "default";
  }
  for (const char* key : {"pinned", "priority"}) {
    if (saved.contains(key)) {
      effective[key] = saved[key];
      sources[key] = "saved";
    }
  }
  nlohmann::json out = {
      {"model_name", asked},          {"canonical_model_name", canonical_model_id(info)},
      {"recipe", info.recipe},        {"saved", saved},
      {"effective", effective},       {"defaults", config.inherit(defaults).to_json()},
      {"sources", std::move(sources)}};
  if (layered.fitted_context()) {
    // Fitted to memory when it loads: the context its server got, or null
    // while it is not loaded.
    out["resolved_ctx_size"] = nullptr;
    for (const auto& s : router_.loaded()) {
      if (s.model_name == info.name && s.replica == 0 && s.slot_ctx_size > 0) {
        out["resolved_ctx_size"] = s.slot_ctx_size;
      }
    }
  } else if (layered.has("ctx_size")) {
    out["resolved_ctx_size"] = layered.ctx_size();
  }
  return out;
}

void ModelOptionsApi::handle_options(const net::Request& r, std::string_view id,
                                     net::ResponseWriter& w) {
  const std::string asked = net::url_decode(id, false);
  auto info = catalogue_.find(asked);
  if (!info) {
    write_error(w, provisioner_.model_not_found(asked));
    return;
  }
  if (r.method == "DELETE") {
    if (wrote_error(w, catalogue_.forget_options(asked))) {
      return;
    }
    send_json(w, 200, options_view(asked, *info, nlohmann::json::object()));
    return;
  }
  nlohmann::json saved = catalogue_.saved_entry(asked);
  if (r.method != "POST") {
    send_json(w, 200, options_view(asked, *info, saved));
    return;
  }
  auto body = http::parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto dry_run = http::bool_field(*body, "dry_run", false);
  if (wrote_error(w, dry_run)) {
    return;
  }
  const auto keys = RecipeOptions::keys_for_recipe(info->recipe);
  nlohmann::json merged = saved;
  for (const auto& [key, value] : body->items()) {
    if (key == "dry_run" || key == "model_name") {
      continue;
    }
    if (key == "pinned") {
      write_error(w, Error(ErrorCode::kInvalidRequest,
                           "'pinned' applies to a model as it loads: use POST /api/v1/load "
                           "or /internal/pin",
                           key));
      return;
    }
    if (!is_standing_key(key) && std::find(keys.begin(), keys.end(), key) == keys.end()) {
      write_error(w, Error(ErrorCode::kInvalidRequest,
                           "unknown option '" + key + "' for recipe '" + info->recipe + "'", key));
      return;
    }
    if (forgets(value)) {
      merged.erase(key);
    } else {
      merged[key] = value;
    }
  }
  if (auto checked = RecipeOptions::from_json(info->recipe, merged); !checked.ok()) {
    write_error(
        w, Error(ErrorCode::kInvalidRequest, checked.error().message(), checked.error().param()));
    return;
  }
  if (auto priority = merged.find("priority");
      priority != merged.end() && !priority->is_number_integer()) {
    write_error(w, Error(ErrorCode::kInvalidRequest, "'priority' must be an integer", "priority"));
    return;
  }
  if (!*dry_run) {
    if (wrote_error(w, catalogue_.save_options(info->name, merged))) {
      return;
    }
    saved = merged;
  }
  nlohmann::json view = options_view(asked, *info, merged);
  view["saved"] = saved;  // a dry run shows what is on disk
  view["dry_run"] = *dry_run;
  send_json(w, 200, view);
}

void ModelOptionsApi::handle_register(net::Request& r, net::ResponseWriter& w) {
  auto body = http::parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto name = http::string_field(*body, "model_name", true);
  if (wrote_error(w, name)) {
    return;
  }
  auto reg = parse_user_registration(*name, *body);
  if (wrote_error(w, reg)) {
    return;
  }
  if (wrote_error(w, catalogue_.put_user_model(reg->key, reg->entry))) {
    return;
  }
  auto info = catalogue_.resolve(*name);
  nlohmann::json answer = {{"status", "success"}, {"canonical_model_name", *name}};
  if (info.ok()) {
    answer["model_name"] = catalogue_.public_id(*info);
    answer["model"] = info->to_api_json();
    answer["model"]["id"] = answer["model_name"];
  } else {
    answer["model_name"] = *name;
  }
  send_json(w, 200, answer);
}

void ModelOptionsApi::handle_files(const net::Request& r, std::string_view id,
                                   net::ResponseWriter& w) {
  const std::string asked = net::url_decode(id, false);
  auto info = catalogue_.resolve(asked);
  if (!info.ok()) {
    write_error(w, info.error().code() == ErrorCode::kModelNotFound
                       ? provisioner_.model_not_found(asked)
                       : info.error());
    return;
  }
  const auto paths = r.query_param("include_paths");
  const bool with_paths = paths && (*paths == "true" || *paths == "1");
  nlohmann::json files = nlohmann::json::array();
  for (const auto& [role, checkpoint] : info->checkpoints) {
    const std::string path = info->resolved_path(role);
    std::error_code ec;
    const bool exists = !path.empty() && fs::exists(path, ec);
    nlohmann::json file = {{"name", exists ? fs::path(path).filename().string() : checkpoint},
                           {"role", role},
                           {"checkpoint", checkpoint},
                           {"size_bytes", exists ? size_on_disk(path) : 0},
                           {"exists", exists}};
    if (with_paths) {
      file["path"] = path.empty() ? nlohmann::json(nullptr) : nlohmann::json(path);
    }
    files.push_back(std::move(file));
  }
  send_json(w, 200, {{"model_id", asked}, {"files", std::move(files)}});
}

}  // namespace lemon::api
