#include "lemon/api/lemonade/management_api.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "lemon/backends/system_info.h"
#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/models/gguf_header_cache.h"

namespace lemon::api {

namespace {

nlohmann::json loaded_entry(const LoadedServerInfo& s) {
  nlohmann::json entry = {{"model_name", s.model_name},
                          {"checkpoint", s.checkpoint},
                          {"last_use", static_cast<double>(s.last_use_ms) / 1000.0},
                          {"type", lemonade11_type_name(s.type)},
                          {"device", device_name(s.device)},
                          {"backend_url", s.backend_url},
                          {"recipe", s.recipe},
                          {"recipe_options", s.recipe_options},
                          {"pid", s.pid ? nlohmann::json(*s.pid) : nlohmann::json(nullptr)},
                          {"in_flight", s.in_flight},
                          {"is_busy", s.in_flight > 0},
                          {"is_streaming", false},
                          {"state", s.draining ? "draining" : "ready"},
                          {"pinned", s.pinned},
                          {"priority", s.priority}};
  if (!s.speculation.is_null()) {
    entry["speculation"] = s.speculation;  // a draft model, or its own MTP
  }
  if (!s.context_fit.is_null()) {
    entry["context_fit"] = s.context_fit;  // the context chosen for ctx_size -1, and why
  }
  if (s.slots > 0) {
    // Requests served at once, those sent ahead into the backend's own
    // queue, the context each gets, and the router's line.
    const SlotOccupancy use = slot_occupancy(s.in_flight, s.slots);
    entry["slots"] = {{"total", s.slots},
                      {"busy", use.busy},
                      {"queued_in_backend", use.queued_in_backend},
                      {"waiting", s.waiting},
                      {"ctx_size", s.slot_ctx_size}};
  }
  return entry;
}

// What a server holds: its estimate per device before it
// started, and its process group's RSS once measured (null until then).
nlohmann::json memory_entry(const LoadedServerInfo& s) {
  nlohmann::json estimate = nlohmann::json::object();
  for (const auto& [device, bytes] : s.memory_estimate) {
    estimate[device] = bytes;
  }
  nlohmann::json charged = nlohmann::json::object();
  for (const auto& [device, bytes] : s.memory_charged) {
    charged[device] = bytes;
  }
  return {{"estimate", std::move(estimate)},
          {"charged", std::move(charged)},
          {"measured_ram", s.measured_ram > 0 ? nlohmann::json(s.measured_ram) : nullptr}};
}

// Adds one replica's memory to its model's entry.
void add_memory(nlohmann::json& total, const nlohmann::json& replica) {
  for (const char* figure : {"estimate", "charged"}) {
    for (const auto& [device, bytes] : replica[figure].items()) {
      total[figure][device] =
          total[figure].value(device, std::int64_t{0}) + bytes.get<std::int64_t>();
    }
  }
  if (!replica["measured_ram"].is_null()) {
    const std::int64_t before =
        total["measured_ram"].is_null() ? 0 : total["measured_ram"].get<std::int64_t>();
    total["measured_ram"] = before + replica["measured_ram"].get<std::int64_t>();
  }
}

}  // namespace

ManagementApi::ManagementApi(ModelCatalogue& catalogue, const PresetCatalogue& presets,
                             const BackendInstaller& installer, Router& router,
                             const StatsStore& stats, inference::ModelProvisioner& provisioner,
                             const http::ServingStatus& serving, const LemonadeSettings& settings)
    : catalogue_(catalogue),
      presets_(presets),
      installer_(installer),
      router_(router),
      stats_(stats),
      provisioner_(provisioner),
      serving_(serving),
      settings_(settings) {}

void ManagementApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  const auto live = [](net::Request&, net::ResponseWriter& w, P) {
    send_json(w, 200, {{"status", "ok"}});
  };
  const auto ready = [this](net::Request&, net::ResponseWriter& w, P) { handle_ready(w); };
  routes.route("GET", "health", RouteAccess::kHealth, Scope::kInferenceOrRead,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_health(r, w); });
  routes.route("GET", "live", RouteAccess::kPublic, Scope::kPublic, live);
  routes.route("GET", "ready", RouteAccess::kPublic, Scope::kPublic, ready);
  routes.route("GET", "stats", RouteAccess::kRead, Scope::kRead,
               [this](net::Request&, net::ResponseWriter& w, P) { handle_stats(w); });
  routes.route("GET", "system-info", RouteAccess::kRead, Scope::kRead,
               [this](net::Request&, net::ResponseWriter& w, P) { handle_system_info(w); });
  // Lemonade's debug route.
  routes.route("POST", "test", RouteAccess::kJsonPost, Scope::kRead,
               [](net::Request&, net::ResponseWriter& w, P) {
                 w.send(200, http::json_headers(), R"({"test":"ok"})");
               });
  routes.route("GET", "models", RouteAccess::kRead, Scope::kInferenceOrRead,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_models(r, w); });
  routes.route("GET", "models/{id}", RouteAccess::kRead, Scope::kInferenceOrRead,
               [this](net::Request& r, net::ResponseWriter& w, P id) { handle_model(r, id, w); });
  routes.route("POST", "load", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_load(r, w); });
  routes.route("POST", "unload", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_unload(r, w); });
  // Lemonade HEAD's pin route, at the root and under every API prefix.
  const auto pin = [this](net::Request& r, net::ResponseWriter& w, P) { handle_pin(r, w); };
  routes.route("POST", "internal/pin", RouteAccess::kJsonPost, Scope::kAdmin, pin);
  routes.root("POST", "/internal/pin", RouteAccess::kJsonPost, Scope::kAdmin, pin);
  // Which API key scope each route needs (docs/auth.md), for operators and
  // the scope test.
  const auto scopes = [&routes](net::Request&, net::ResponseWriter& w, P) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [route, scope] : routes.route_scopes()) {
      list.push_back({{"route", route}, {"scope", http::scope_name(scope)}});
    }
    send_json(w, 200, {{"routes", std::move(list)}});
  };
  routes.route("GET", "internal/routes", RouteAccess::kRead, Scope::kAdmin, scopes);
  routes.root("GET", "/internal/routes", RouteAccess::kRead, Scope::kAdmin, scopes);
  // Liveness and readiness also at the root, where probes look by default.
  routes.root("GET", "/live", RouteAccess::kPublic, Scope::kPublic, live);
  routes.root("GET", "/ready", RouteAccess::kPublic, Scope::kPublic, ready);
}

void ManagementApi::handle_health(const net::Request& r, net::ResponseWriter& w) {
  auto loaded = router_.loaded();
  if (const http::ApiKey* key = http::caller_key(r); key != nullptr && !key->models.empty()) {
    // A key with a model list sees only those models (as in its /models).
    std::erase_if(loaded,
                  [key](const LoadedServerInfo& s) { return !key->allows_model(s.model_name); });
  }
  auto latest = router_.most_recently_loaded();
  if (const http::ApiKey* key = http::caller_key(r);
      latest && key != nullptr && !key->allows_model(latest->model_name)) {
    latest.reset();
  }
  // One entry per model (Lemonade's shape), its replicas listed inside.
  nlohmann::json all = nlohmann::json::array();
  std::map<std::string, std::size_t> index;
  for (const auto& s : loaded) {
    nlohmann::json replica = {{"replica", s.replica},
                              {"pid", s.pid ? nlohmann::json(*s.pid) : nlohmann::json(nullptr)},
                              {"backend_url", s.backend_url},
                              {"in_flight", s.in_flight},
                              {"state", s.draining ? "draining" : "ready"},
                              {"memory", memory_entry(s)}};
    auto at = index.find(s.model_name);
    if (at == index.end()) {
      index[s.model_name] = all.size();
      nlohmann::json entry = loaded_entry(s);
      entry["id"] = catalogue_.public_id_of(s.model_name);
      entry["saved_slots_bytes"] = router_.saved_slot_bytes(s.model_name);
      entry["is_streaming"] = open_streams_ && open_streams_(s.model_name) > 0;
      entry["memory"] = replica["memory"];
      entry["replicas"] = nlohmann::json::array({replica});
      all.push_back(std::move(entry));
      continue;
    }
    nlohmann::json& entry = all[at->second];
    add_memory(entry["memory"], replica["memory"]);
    entry["replicas"].push_back(replica);
    entry["in_flight"] = entry["in_flight"].get<int>() + s.in_flight;
    entry["is_busy"] = entry["in_flight"].get<int>() > 0;
    if (entry.contains("slots")) {
      const SlotOccupancy use = slot_occupancy(s.in_flight, s.slots);
      entry["slots"]["total"] = entry["slots"]["total"].get<int>() + s.slots;
      entry["slots"]["busy"] = entry["slots"]["busy"].get<int>() + use.busy;
      entry["slots"]["queued_in_backend"] =
          entry["slots"]["queued_in_backend"].get<int>() + use.queued_in_backend;
    }
    if (!s.draining) {
      entry["state"] = "ready";
    }
  }
  // Per type, under 9.4.1's names and Lemonade 11's ("transcription" for
  // "audio"): the slots, and how many of them pinned models hold.
  nlohmann::json max_models = nlohmann::json::object();
  nlohmann::json pinned_models = nlohmann::json::object();
  for (ModelType t : kAllModelTypes) {
    int pinned = 0;
    for (const auto& s : loaded) {
      pinned += s.type == t && s.pinned && s.replica == 0 ? 1 : 0;
    }
    for (const char* name : {model_type_name(t), lemonade11_type_name(t)}) {
      max_models[name] = router_.limits().limit(t);
      pinned_models[name] = pinned;
    }
  }
  nlohmann::json body = {
      {"status", "ok"},
      {"version", LEMON_API_VERSION},
      {"router_version", LEMON_ROUTER_VERSION},
      {"model_loaded", latest ? nlohmann::json(latest->model_name) : nlohmann::json(nullptr)},
      {"checkpoint_loaded", latest ? nlohmann::json(latest->checkpoint) : nlohmann::json(nullptr)},
      {"all_models_loaded", std::move(all)},
      {"max_models", std::move(max_models)},
      {"pinned_models", std::move(pinned_models)}};
  // Where WebSocket clients (realtime transcription, the log stream) connect.
  if (auto socket_port = serving_.websocket_port()) {
    body["websocket_port"] = *socket_port;
  }
  // Each device's memory as last read, its budget and what our servers hold
  // (empty with --memory-budget off).
  // Hold the view: a range-for over a member of a temporary would read it
  // after it is freed (C++20 does not extend the temporary's life).
  const auto view = router_.view();
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : view->devices) {
    devices.push_back({{"device", d.device},
                       {"total", d.total},
                       {"available", d.available},
                       {"budget", d.budget},
                       {"used_by_router", d.used_by_router}});
  }
  body["devices"] = std::move(devices);
  const std::optional<std::string> profile =
      active_profile_ ? active_profile_() : std::optional<std::string>();
  body["profile"] = profile ? nlohmann::json(*profile) : nlohmann::json(nullptr);
  // Models served by other machines, with their endpoints' health.
  const http::ApiKey* caller = http::caller_key(r);
  body["remote_models"] = remote_ != nullptr ? remote_->to_json([caller](const std::string& name) {
    return caller == nullptr || caller->allows_model(name);
  })
                                             : nlohmann::json::array();
  send_json(w, 200, body);
}

void ManagementApi::handle_ready(net::ResponseWriter& w) {
  // Ready while accepting work, model swaps included; not while draining.
  if (serving_.draining()) {
    write_error(w,
                Error(ErrorCode::kShuttingDown, "lemonade-router is draining").with_retry_after(1));
    return;
  }
  send_json(w, 200, {{"status", "ready"}});
}

void ManagementApi::handle_system_info(net::ResponseWriter& w) {
  nlohmann::json info = system_info_json(installer_, settings_.cache_dir, router_.cli_options());
  PresetReport presets = presets_.report();
  info["presets"] = {{"builtin", presets.builtin},
                     {"user", presets.user},
                     {"file", presets.file},
                     {"errors", presets.errors}};
  send_json(w, 200, info);
}

void ManagementApi::handle_stats(net::ResponseWriter& w) {
  auto last = stats_.last();
  nlohmann::json answer = last ? last->to_json() : RequestStats{}.to_json();
  if (policies_ != nullptr) {
    answer.update(policies_->stats());
  }
  send_json(w, 200, answer);
}

namespace {

// Lemonade 11's max_context_window: the context a downloaded GGUF was
// trained for, read from its header (kept by file identity); absent when
// unknown.
void add_max_context_window(nlohmann::json& entry, const ModelInfo& m) {
  const std::string main = m.resolved_path("main");
  if (!m.downloaded || !main.ends_with(".gguf")) {
    return;
  }
  if (auto header = GgufHeaderCache::shared().get(main);
      header.ok() && header->context_length > 0) {
    entry["max_context_window"] = header->context_length;
  }
}

}  // namespace

void ManagementApi::add_measured_memory(nlohmann::json& entry, const std::string& model,
                                        std::int64_t live_ram) const {
  // Loaded: its servers' RSS now (null until measured). Not loaded: what
  // its last configuration was measured to hold, remembered across loads.
  entry["measured_ram"] = live_ram > 0 ? nlohmann::json(live_ram) : nullptr;
  entry["measured_vram"] = nullptr;
  const auto remembered = router_.remembered_footprint(model);
  if (!remembered) {
    return;
  }
  std::int64_t vram = 0;
  for (const auto& [device, bytes] : *remembered) {
    if (device == kRamDevice && live_ram <= 0) {
      entry["measured_ram"] = bytes;
    } else if (device != kRamDevice) {
      vram += bytes;
    }
  }
  if (vram > 0) {
    entry["measured_vram"] = vram;
  }
}

void ManagementApi::handle_models(net::Request& r, net::ResponseWriter& w) {
  auto show_all = r.query_param("show_all");
  bool all = show_all && (*show_all == "true" || *show_all == "1");
  nlohmann::json data = nlohmann::json::array();
  // A loaded model shows its pin and priority now; another those
  // recipe_options.json gives it when it loads.
  std::map<std::string, LoadStanding> loaded;
  std::map<std::string, std::int64_t> live_ram;
  for (const auto& s : router_.loaded()) {
    loaded[s.model_name] = {s.pinned, s.priority};
    live_ram[s.model_name] += s.measured_ram;
  }
  const http::ApiKey* key = http::caller_key(r);
  for (const auto& m : catalogue_.list(all)) {
    const std::string id = catalogue_.public_id(m);
    if (key != nullptr && !key->allows_model(m.name) && !key->allows_model(id)) {
      continue;  // a model outside the key's list is not shown to it
    }
    nlohmann::json entry = m.to_api_json();
    entry["id"] = id;
    auto live = loaded.find(m.name);
    const bool is_loaded = live != loaded.end();
    entry["pinned"] = is_loaded ? *live->second.pinned : m.saved_pinned;
    entry["priority"] = is_loaded ? *live->second.priority : m.saved_priority;
    entry["saved_slots_bytes"] = router_.saved_slot_bytes(m.name);
    add_max_context_window(entry, m);
    add_measured_memory(entry, m.name, is_loaded ? live_ram[m.name] : 0);
    data.push_back(std::move(entry));
  }
  if (extend_models_) {
    extend_models_(data);
  }
  // An alias is listed as the model it stands for, under its own id.
  for (const auto& [alias, target] : catalogue_.aliases().all()) {
    auto m = catalogue_.find(alias);
    if (!m || (key != nullptr && !key->allows_model(alias) && !key->allows_model(m->name))) {
      continue;
    }
    const std::string of = catalogue_.public_id(*m);
    auto row = std::find_if(data.begin(), data.end(),
                            [&of](const nlohmann::json& listed) { return listed["id"] == of; });
    if (row != data.end()) {
      nlohmann::json entry = *row;
      entry["id"] = alias;
      entry["alias_of"] = of;
      data.push_back(std::move(entry));
    }
  }
  send_json(w, 200, {{"object", "list"}, {"data", std::move(data)}});
}

void ManagementApi::handle_model(const net::Request& r, std::string_view id,
                                 net::ResponseWriter& w) {
  std::string name = net::url_decode(id, false);
  if (const http::ApiKey* key = http::caller_key(r); key != nullptr && !key->allows_model(name)) {
    write_error(w, provisioner_.model_not_found(name));  // as absent as in its /models
    return;
  }
  auto m = catalogue_.resolve(name);
  if (!m.ok()) {
    write_error(w, m.error().code() == ErrorCode::kModelNotFound
                       ? provisioner_.model_not_found(name)
                       : m.error());
    return;
  }
  nlohmann::json entry = m->to_api_json();
  entry["id"] = name;  // as asked: "user.X" (9.4.1), "X" or an alias (11)
  entry["pinned"] = m->saved_pinned;
  entry["priority"] = m->saved_priority;
  entry["saved_slots_bytes"] = router_.saved_slot_bytes(m->name);
  add_max_context_window(entry, *m);
  std::int64_t live_ram = 0;
  for (const auto& loaded : router_.loaded()) {
    if (loaded.model_name == m->name) {
      entry["pinned"] = loaded.pinned;
      entry["priority"] = loaded.priority;
      live_ram += loaded.measured_ram;
    }
  }
  add_measured_memory(entry, m->name, live_ram);
  send_json(w, 200, entry);
}

}  // namespace lemon::api
