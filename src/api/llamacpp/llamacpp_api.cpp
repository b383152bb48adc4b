#include "lemon/api/llamacpp/llamacpp_api.h"

#include <algorithm>
#include <sstream>

#include "lemon/core/log.h"
#include "lemon/http/autoload_param.h"
#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/inference/sse_scanner.h"
#include "lemon/net/upstream_client.h"

namespace lemon::api {

using inference::InferenceRequest;

namespace {

constexpr std::string_view kUserPrefix = "user.";
constexpr std::string_view kExtraPrefix = "extra.";
// A backend's own GET (/props, /slots) may take this long.
constexpr std::chrono::milliseconds kBackendGetTimeout{10'000};

Error missing_model() {
  return Error(ErrorCode::kInvalidRequest, "model name is missing from the request", "model");
}

// The lines of a Prometheus text about `model` (its samples labelled
// model="<model>"), each family's HELP and TYPE lines before its first one.
std::string metrics_of_model(const std::string& text, const std::string& model) {
  const std::string label = "model=\"" + model + "\"";
  std::string out;
  std::string family_head;  // HELP and TYPE lines of the family read last
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# HELP")) {
      family_head = line + "\n";
      continue;
    }
    if (line.starts_with("#")) {
      family_head += line + "\n";
      continue;
    }
    if (line.find(label) == std::string::npos) {
      continue;
    }
    out += family_head;
    family_head.clear();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string llamacpp_name_of(const ModelInfo& info) {
  const std::string& name = info.name;
  if (info.source == ModelSource::kExtraDir && name.starts_with(kExtraPrefix)) {
    std::string stem = name.substr(kExtraPrefix.size());
    if (stem.size() > 5 && stem.ends_with(".gguf")) {
      stem.resize(stem.size() - 5);
    }
    return stem;
  }
  if (name.starts_with(kUserPrefix)) {
    return name.substr(kUserPrefix.size());
  }
  return name;
}

LlamaCppApi::LlamaCppApi(ModelCatalogue& catalogue, PresetCatalogue& presets, ModelStore& store,
                         Router& router, ServerFactory& factory,
                         inference::ModelProvisioner& provisioner,
                         inference::InferenceGateway& gateway, telemetry::TelemetryHub& hub,
                         const http::ServingStatus& serving)
    : catalogue_(catalogue),
      presets_(presets),
      store_(store),
      router_(router),
      factory_(factory),
      provisioner_(provisioner),
      gateway_(gateway),
      hub_(hub),
      serving_(serving) {}

LlamaCppApi::~LlamaCppApi() {
  stopping_ = true;
  std::vector<std::thread> threads;
  {
    MutexLock lock(threads_mu_);
    for (auto& [model, cancel] : downloads_) {
      *cancel = true;
    }
    threads.swap(threads_);
  }
  activity_.notify();
  for (auto& t : threads) {
    t.join();
  }
}

void LlamaCppApi::in_background(std::function<void()> work) {
  MutexLock lock(threads_mu_);
  threads_.emplace_back([work = std::move(work)] {
    try {
      work();
    } catch (const std::exception& e) {
      logger("http")->error("llama.cpp API: {}", e.what());
    }
  });
}

void LlamaCppApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  routes.root("GET", "/health", RouteAccess::kPublic, Scope::kPublic,
              [this](net::Request&, net::ResponseWriter& w, P) { handle_health(w); });
  routes.root("GET", "/models", RouteAccess::kRead, Scope::kInferenceOrRead,
              [this](net::Request& r, net::ResponseWriter& w, P) { handle_models(r, w); });
  routes.root("POST", "/models", RouteAccess::kJsonPost, Scope::kAdmin,
              [this](net::Request& r, net::ResponseWriter& w, P) { handle_download(r, w); });
  routes.root("DELETE", "/models", RouteAccess::kRead, Scope::kAdmin,
              [this](net::Request& r, net::ResponseWriter& w, P) { handle_delete(r, w); });
  routes.root("POST", "/models/load", RouteAccess::kJsonPost, Scope::kAdmin,
              [this](net::Request& r, net::ResponseWriter& w, P) { handle_load(r, w); });
  routes.root("POST", "/models/unload", RouteAccess::kJsonPost, Scope::kAdmin,
              [this](net::Request& r, net::ResponseWriter& w, P) { handle_unload(r, w); });
  routes.root("GET", "/models/sse", RouteAccess::kRead, Scope::kRead,
              [this](net::Request& r, net::ResponseWriter& w, P) { handle_sse(r, w); });
  routes.root("GET", "/props", RouteAccess::kRead, Scope::kInferenceOrRead,
              [this](net::Request& r, net::ResponseWriter& w, P) { handle_props(r, w); });
  routes.root("GET", "/slots", RouteAccess::kRead, Scope::kRead,
              [this](net::Request& r, net::ResponseWriter& w, P) { handle_slots(r, w); });
  // llama-server's inference routes at the root (under /v1 the OpenAI
  // room's serve the same): the route, and the backend's own path for the
  // ones only llama-server has.
  const struct {
    const char* path;
    ApiRoute route;
    const char* native;
  } inference[] = {
      {"/chat/completions", ApiRoute::kChatCompletions, ""},
      {"/completions", ApiRoute::kCompletions, ""},
      {"/completion", ApiRoute::kCompletions, "/completion"},
      {"/infill", ApiRoute::kCompletions, "/infill"},
      {"/embeddings", ApiRoute::kEmbeddings, ""},
      {"/embedding", ApiRoute::kEmbeddings, "/embedding"},
      {"/rerank", ApiRoute::kReranking, ""},
      {"/reranking", ApiRoute::kReranking, ""},
      {"/tokenize", ApiRoute::kTokenize, "/tokenize"},
      {"/detokenize", ApiRoute::kTokenize, "/detokenize"},
      {"/apply-template", ApiRoute::kTokenize, "/apply-template"},
  };
  for (const auto& i : inference) {
    routes.root(
        "POST", i.path, RouteAccess::kJsonPost, Scope::kInference,
        [this, route = i.route, native = std::string(i.native)](
            net::Request& r, net::ResponseWriter& w, P) { handle_inference(route, native, r, w); });
  }
}

std::optional<LlamaCppApi::Target> LlamaCppApi::target_of(const std::string& name) const {
  auto preset = presets_.for_request(name);
  if (!preset.ok()) {
    return std::nullopt;
  }
  if (*preset) {
    return Target{(*preset)->server, presets_.catalogue_name((*preset)->server)};
  }
  // Our names, then llama.cpp's (the catalogue's fallbacks), then a user
  // model named without "user.".
  for (const std::string& candidate : {name, std::string(kUserPrefix) + name}) {
    if (auto info = catalogue_.find(candidate)) {
      return Target{info->name, info->name};
    }
  }
  return std::nullopt;
}

std::string LlamaCppApi::id_of_server(const std::string& server) const {
  if (server.find('~') != std::string::npos) {
    for (const auto& e : presets_.list()) {
      if (e.server == server) {
        return e.ini ? e.preset.id : std::string(kPresetPrefix) + e.preset.id;
      }
    }
  }
  if (auto info = catalogue_.find(server)) {
    return llamacpp_name_of(*info);
  }
  return server;
}

void LlamaCppApi::handle_health(net::ResponseWriter& w) {
  if (serving_.draining()) {
    write_error(w,
                Error(ErrorCode::kShuttingDown, "lemonade-router is draining").with_retry_after(1));
    return;
  }
  send_json(w, 200, {{"status", "ok"}});
}

void LlamaCppApi::handle_props(net::Request& r, net::ResponseWriter& w) {
  if (r.query_param("model")) {
    backend_get(r, w, "/props");
    return;
  }
  // The router's own props (llama.cpp's router answers role "router").
  const int limit = router_.limits().limit(ModelType::kLlm);
  nlohmann::ordered_json props = {
      {"role", "router"},
      {"max_instances", limit < 0 ? 0 : limit},
      {"models_autoload", !gateway_.settings().no_models_autoload},
      {"model_alias", "lemonade-router"},
      {"model_path", "none"},
      {"default_generation_settings", {{"params", nullptr}, {"n_ctx", 0}}},
      {"ui_settings", nlohmann::ordered_json::object()},
      {"build_info", std::string("lemonade-router ") + LEMON_ROUTER_VERSION},
      {"cors_proxy_enabled", false}};
  w.send(200, http::json_headers(), props.dump());
}

void LlamaCppApi::handle_slots(net::Request& r, net::ResponseWriter& w) {
  if (!r.query_param("model")) {
    write_error(w, missing_model());
    return;
  }
  backend_get(r, w, "/slots");
}

void LlamaCppApi::backend_get(net::Request& r, net::ResponseWriter& w, const std::string& path) {
  const std::string name = r.query_param("model").value_or("");
  if (name.empty()) {
    write_error(w, missing_model());
    return;
  }
  if (auto refused = gateway_.refuse_model(http::caller_key(r), name)) {
    write_error(w, *refused);
    return;
  }
  auto target = target_of(name);
  if (!target) {
    write_error(w, provisioner_.model_not_found(name));
    return;
  }
  if (provisioner_.needs_load(target->server)) {
    if (!http::autoload_param(r).value_or(!gateway_.settings().no_models_autoload)) {
      write_error(w, Error(ErrorCode::kModelNotLoaded,
                           "model '" + name + "' is not loaded, and autoload is off", "model"));
      return;
    }
    WaitHooks hooks;
    hooks.cancelled = [&w] { return !w.client_connected(); };
    if (Status loaded = provisioner_.load(target->server, RecipeOptions{}, hooks); !loaded.ok()) {
      if (loaded.error().code() != ErrorCode::kCancelled) {
        write_error(w, loaded.error());
      }
      return;
    }
  }
  // Read beside the requests, as the context monitor reads /slots: no
  // lease, so a busy model answers at once.
  const auto view = router_.view();
  for (const auto& s : view->servers) {
    if (s.info.model_name != target->server || s.info.draining) {
      continue;
    }
    net::UpstreamRequest get;
    get.method = "GET";
    get.path = path;
    net::CallOptions options;
    options.total_timeout = kBackendGetTimeout;
    auto answer = s.server().client().send(get, options);
    if (wrote_error(w, answer)) {
      return;
    }
    if (answer->status >= 400) {
      // The backend's error (llama-server's 501 without --slots, ...) in
      // our envelope, its status kept.
      w.send(answer->status, http::json_headers(),
             http::json_text(inference::normalize_backend_error(answer->body, answer->status)));
      return;
    }
    w.send(answer->status, http::json_headers(), answer->body);
    return;
  }
  write_error(w, Error(ErrorCode::kModelNotLoaded, "model '" + name + "' is not loaded", "model"));
}

void LlamaCppApi::handle_inference(ApiRoute route, const std::string& native_path, net::Request& r,
                                   net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto model = string_field(*body, "model", false);
  if (wrote_error(w, model)) {
    return;
  }
  if (model->empty()) {
    write_error(w, missing_model());
    return;
  }
  auto stream = http::bool_field(*body, "stream", false);
  if (wrote_error(w, stream)) {
    return;
  }
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.route = route;
  req.native_path = native_path;
  // A preset keeps its name (the gateway applies it); another model goes
  // by our name for it.
  req.model = *model;
  if (auto preset = presets_.for_request(*model); preset.ok() && !*preset) {
    if (auto target = target_of(*model)) {
      req.model = target->server;
    }
  }
  req.stream = *stream;
  req.autoload = http::autoload_param(r);
  req.json = &*body;
  req.raw_body = r.body;
  req.content_type = "application/json";
  gateway_.forward(req, w);
}

bool LlamaCppApi::serve_model_metrics(net::Request& r, net::ResponseWriter& w) {
  auto name = r.query_param("model");
  if (!name) {
    return false;
  }
  auto target = target_of(*name);
  const std::string server = target ? target->server : *name;
  // Our own figures of that model (we do not start llama-server with
  // --metrics): every family with a sample labelled with it.
  const std::string all =
      hub_.render(*router_.view(), router_.limits(), telemetry::ServerGauges{}, {});
  w.send(200, net::Headers{{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
         metrics_of_model(all, server));
  return true;
}

void LlamaCppApi::start_startup_loads() {
  std::vector<std::string> servers;
  for (const auto& e : presets_.file_presets()) {
    if (e.ini && e.ini->load_on_startup) {
      servers.push_back(e.server);
    }
  }
  if (servers.empty()) {
    return;
  }
  in_background([this, servers] {
    for (const auto& server : servers) {
      WaitHooks hooks;
      hooks.cancelled = [this] { return stopping_.load(); };
      if (Status loaded = provisioner_.load(server, RecipeOptions{}, hooks); !loaded.ok()) {
        logger("http")->warn("load-on-startup '{}': {}", server, loaded.error().message());
      }
    }
  });
}

}  // namespace lemon::api
