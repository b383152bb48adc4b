// ManagementApi's load, unload and pin routes (POST /load, /unload,
// /internal/pin).
#include "lemon/api/lemonade/management_api.h"

#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"

namespace lemon::api {

namespace {

// POST /load's "priority": an integer in [kMinPriority,
// kMaxPriority], or absent (null counts as absent).
Result<std::optional<int>> priority_field(const nlohmann::json& body) {
  auto p = body.find("priority");
  if (p == body.end() || p->is_null()) {
    return std::optional<int>();
  }
  if (!p->is_number_integer() || p->get<std::int64_t>() < kMinPriority ||
      p->get<std::int64_t>() > kMaxPriority) {
    return Error(ErrorCode::kInvalidRequest,
                 "'priority' must be an integer from " + std::to_string(kMinPriority) + " to " +
                     std::to_string(kMaxPriority) + ", got " + p->dump(),
                 "priority");
  }
  return std::optional<int>(p->get<int>());
}

// The load options of a /load body for this load: a load option given as
// null skips the model's saved value (Lemonade 11), so it takes the
// router's own (the command line, config.json, the default).
Result<RecipeOptions> options_for_this_load(const nlohmann::json& body,
                                            const RecipeOptions& router_layer) {
  nlohmann::json asked = body;
  for (const auto& key : RecipeOptions::all_keys()) {
    if (auto it = asked.find(key); it != asked.end() && it->is_null()) {
      if (router_layer.has(key)) {
        *it = router_layer.raw()[key];
      } else {
        asked.erase(it);
      }
    }
  }
  return RecipeOptions::from_json("", asked);
}

}  // namespace

void ManagementApi::handle_load(net::Request& r, net::ResponseWriter& w) {
  if (auto raw = parse_json_object(r.body); raw.ok() && raw->contains("preset")) {
    if (raw->contains("model_name") || raw->contains("model")) {
      write_error(w, Error(ErrorCode::kInvalidRequest,
                           "name either 'preset' or 'model_name', not both", "preset"));
      return;
    }
    handle_load_preset(*raw, w);
    return;
  }
  auto request = parse_model_request(r.body);
  if (wrote_error(w, request)) {
    return;
  }
  const nlohmann::json& body = request->body;
  const std::string& name = request->model;
  auto info = catalogue_.find(name);
  if (!info) {
    write_error(w, provisioner_.model_not_found(name));
    return;
  }
  if (info->is_collection()) {
    load_collection(*info, w);
    return;
  }
  auto options = RecipeOptions::from_json("", body);
  if (wrote_error(w, options)) {
    return;
  }
  auto save = bool_field(body, "save_options", false);
  if (wrote_error(w, save)) {
    return;
  }
  // "pinned" (Lemonade HEAD's key): pin or unpin it as it is
  // published; "priority" likewise.
  LoadStanding standing;
  auto priority = priority_field(body);
  if (wrote_error(w, priority)) {
    return;
  }
  standing.priority = *priority;
  std::optional<bool> pin;
  if (auto p = body.find("pinned"); p != body.end() && !p->is_null()) {
    auto value = bool_field(body, "pinned", false);
    if (wrote_error(w, value)) {
      return;
    }
    pin = *value;
  }
  standing.pinned = pin;
  WaitHooks hooks;
  hooks.cancelled = [&w] { return !w.client_connected(); };
  // Registered but not on disk, or its backend not installed: download or
  // install first (Lemonade does too), then load.
  // A pin is applied in the step that publishes the model, so no other
  // load can evict it in between.
  auto this_load = options_for_this_load(body, router_.cli_options());
  if (wrote_error(w, this_load)) {
    return;
  }
  Status loaded = provisioner_.load(name, *this_load, hooks, standing);
  if (!loaded.ok()) {
    if (loaded.error().code() != ErrorCode::kCancelled) {
      write_error(w, loaded.error());
    }
    return;
  }
  if (*save) {
    // What this load ran with (request > saved > CLI > defaults), so a later
    // load or auto-load without options gets the same server; a pin, given
    // or saved before, is kept with them. A null keeps the saved value.
    RecipeOptions effective = options->inherit(info->saved_options)
                                  .inherit(router_.cli_options())
                                  .restricted_to(info->recipe);
    nlohmann::json saved_entry = effective.to_json();
    if (pin.value_or(info->saved_pinned)) {
      saved_entry["pinned"] = true;
    }
    if (const int kept = standing.priority.value_or(info->saved_priority); kept != 0) {
      saved_entry["priority"] = kept;
    }
    if (wrote_error(w, catalogue_.save_options(name, saved_entry))) {
      return;
    }
  }
  nlohmann::json answer = {{"status", "success"},
                           {"message", "Loaded model: " + name},
                           {"model_name", name},
                           {"checkpoint", info->checkpoint()},
                           {"recipe", info->recipe}};
  if (pin) {
    answer["pinned"] = *pin;
  }
  if (standing.priority) {
    answer["priority"] = *standing.priority;
  }
  // The context it got, and why when it was fitted to memory.
  for (const auto& s : router_.loaded()) {
    if (s.model_name == info->name && s.replica == 0) {
      if (s.slot_ctx_size > 0) {
        answer["ctx_size"] = s.slot_ctx_size;
      }
      if (!s.context_fit.is_null()) {
        answer["context_fit"] = s.context_fit;
      }
    }
  }
  send_json(w, 200, answer);
}

void ManagementApi::handle_pin(net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto name = string_field(*body, "model_name", false);
  if (name.ok() && name->empty()) {
    name = string_field(*body, "model", false);
  }
  if (wrote_error(w, name)) {
    return;
  }
  if (name->empty()) {
    write_error(w, Error(ErrorCode::kInvalidRequest, "'model_name' is required", "model_name"));
    return;
  }
  auto pinned = body->find("pinned");
  if (pinned == body->end() || !pinned->is_boolean()) {
    write_error(w, Error(ErrorCode::kInvalidRequest, "'pinned' is required and must be a boolean",
                         "pinned"));
    return;
  }
  if (wrote_error(w, router_.set_pinned(*name, pinned->get<bool>()))) {
    return;
  }
  send_json(w, 200,
            {{"status", "success"}, {"model_name", *name}, {"pinned", pinned->get<bool>()}});
}

void ManagementApi::handle_load_preset(const nlohmann::json& body, net::ResponseWriter& w) {
  auto id = string_field(body, "preset", true);
  if (wrote_error(w, id)) {
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

void ManagementApi::handle_unload(net::Request& r, net::ResponseWriter& w) {
  std::string name;
  if (r.body.find_first_not_of(" \t\r\n") != std::string::npos) {
    auto body = parse_json_object(r.body);
    if (wrote_error(w, body)) {
      return;
    }
    auto field = string_field(*body, "model_name", false);
    if (field.ok() && field->empty()) {
      field = string_field(*body, "model", false);
    }
    if (wrote_error(w, field)) {
      return;
    }
    name = *field;
  }
  if (name.empty()) {
    router_.unload_all();
    send_json(w, 200, {{"status", "success"}, {"message", "All models unloaded successfully"}});
    return;
  }
  if (auto info = catalogue_.find(name); info && info->recipe == "remote") {
    write_error(w, Error(ErrorCode::kServedRemotely,
                         "model '" + name +
                             "' is served by another machine (recipe remote): it is never "
                             "loaded here",
                         "model_name"));
    return;
  }
  Status done = router_.unload(name);
  if (wrote_error(w, done)) {
    return;
  }
  send_json(
      w, 200,
      {{"status", "success"}, {"message", "Model unloaded successfully"}, {"model_name", name}});
}

}  // namespace lemon::api
