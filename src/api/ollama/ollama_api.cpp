#include "lemon/api/ollama/ollama_api.h"

#include <algorithm>
#include <map>

#include "lemon/api/ollama/ollama_answer.h"
#include "lemon/api/ollama/ollama_models.h"
#include "lemon/api/ollama/ollama_request.h"
#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/inference/translating_writer.h"

namespace lemon::api {

using http::ApiDialect;
using inference::ChatAnswer;
using inference::InferenceRequest;
using inference::TranslatingWriter;

namespace {

using nlohmann::json;
using Clock = ChatAnswer::Clock;

std::int64_t ns_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

// Refuses keys of a small management body that the route does not take.
std::optional<Error> unexpected_key(const json& body, std::initializer_list<const char*> known) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      return Error(ErrorCode::kInvalidRequest,
                   "'" + it.key() + "' is not supported by lemonade-router's Ollama API", it.key());
    }
  }
  return std::nullopt;
}

}  // namespace

OllamaApi::OllamaApi(const ModelCatalogue& catalogue, ModelStore& store, Router& router,
                     inference::ModelProvisioner& provisioner, inference::InferenceGateway& gateway)
    : catalogue_(catalogue),
      store_(store),
      router_(router),
      provisioner_(provisioner),
      gateway_(gateway) {}

void OllamaApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  const auto o = ApiDialect::kOllama;
  routes.root(
      "POST", "/api/chat", RouteAccess::kJsonPost, Scope::kInference,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_chat(r, w, false); }, o);
  routes.root(
      "POST", "/api/generate", RouteAccess::kJsonPost, Scope::kInference,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_chat(r, w, true); }, o);
  routes.root(
      "POST", "/api/embed", RouteAccess::kJsonPost, Scope::kInference,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_embed(r, w, false); }, o);
  routes.root(
      "POST", "/api/embeddings", RouteAccess::kJsonPost, Scope::kInference,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_embed(r, w, true); }, o);
  routes.root(
      "GET", "/api/tags", RouteAccess::kRead, Scope::kInferenceOrRead,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_tags(r, w); }, o);
  routes.root(
      "POST", "/api/show", RouteAccess::kJsonPost, Scope::kInferenceOrRead,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_show(r, w); }, o);
  routes.root(
      "GET", "/api/ps", RouteAccess::kRead, Scope::kInferenceOrRead,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_ps(r, w); }, o);
  routes.root(
      "POST", "/api/pull", RouteAccess::kJsonPost, Scope::kAdmin,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_pull(r, w); }, o);
  routes.root(
      "DELETE", "/api/delete", RouteAccess::kJsonPost, Scope::kAdmin,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_delete(r, w); }, o);
  routes.root(
      "GET", "/api/version", RouteAccess::kRead, Scope::kInferenceOrRead,
      [](net::Request&, net::ResponseWriter& w, P) {
        send_json(w, 200, {{"version", kOllamaApiVersion}});
      },
      o);
  // Ollama routes this router has no counterpart for: 501, as Lemonade
  // 9.4.1 answers them, rather than a 404 that reads like a typo.
  // Every method, answered before the body: a blob upload
  // (application/octet-stream, any size) gets 501 too, not 415 or 413.
  for (const std::string path : {"/api/create", "/api/copy", "/api/push", "/api/blobs/{id}"}) {
    routes.not_implemented(path,
                           path.substr(0, path.find("/{")) +
                               " is not supported by lemonade-router: models come from its "
                               "catalogue (see /api/pull and POST /api/v1/pull)",
                           o);
  }
}

void OllamaApi::handle_chat(net::Request& r, net::ResponseWriter& raw, bool generate) {
  const auto started = Clock::now();
  TranslatingWriter errors(raw, ApiDialect::kOllama);
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    errors.fail(body.error());
    return;
  }
  auto request = generate ? ollama_generate_request(*body) : ollama_chat_request(*body);
  if (!request.ok()) {
    errors.fail(request.error());
    return;
  }
  if (request->load_only) {
    // Nothing to forward: the key's model list is checked here.
    if (auto refused = gateway_.refuse_model(http::caller_key(r), request->model)) {
      errors.fail(*refused);
      return;
    }
    load_only(request->model, request->client_model, generate, request->stream, request->keep_alive,
              raw);
    return;
  }
  OllamaAnswer answer(generate ? OllamaEndpoint::kGenerate : OllamaEndpoint::kChat,
                      request->client_model, request->stream, started);
  TranslatingWriter w(raw, ApiDialect::kOllama, &answer);
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.route = ApiRoute::kChatCompletions;
  req.model = request->model;
  req.stream = true;  // the backend always streams; see chat_answer.h
  req.json = &request->openai;
  req.body_changed = true;
  req.content_type = "application/json";
  req.keep_alive = request->keep_alive;
  req.images_field = request->has_images ? "images" : "";
  req.translating = &w;
  gateway_.forward(req, w);
}

void OllamaApi::load_only(const std::string& model, const std::string& client_model, bool generate,
                          bool stream, std::optional<std::chrono::milliseconds> keep_alive,
                          net::ResponseWriter& raw) {
  TranslatingWriter w(raw, ApiDialect::kOllama);
  if (!catalogue_.find(model)) {
    w.fail(provisioner_.model_not_found(model));
    return;
  }
  json answer = {{"model", client_model},
                 {"created_at", ollama_timestamp(std::chrono::system_clock::now())}};
  if (generate) {
    answer["response"] = "";
  } else {
    answer["message"] = {{"role", "assistant"}, {"content", ""}};
  }
  answer["done"] = true;
  if (keep_alive && keep_alive->count() == 0) {
    // Lemonade's and Ollama's way to unload: keep_alive 0 and nothing to do.
    Status unloaded = router_.unload(model);
    if (!unloaded.ok() && unloaded.error().code() != ErrorCode::kModelNotLoaded) {
      w.fail(unloaded.error());
      return;
    }
    answer["done_reason"] = "unload";
  } else {
    WaitHooks hooks;
    hooks.tick_interval = gateway_.settings().keepalive_interval;
    hooks.cancelled = [&raw] { return !raw.client_connected(); };
    auto got = provisioner_.acquire(model, hooks, ModelType::kLlm, keep_alive);
    if (!got.ok()) {
      if (got.error().code() != ErrorCode::kCancelled) {
        w.fail(got.error());
      }
      return;
    }
    answer["done_reason"] = "load";
  }
  if (stream) {
    raw.send(200, net::Headers{{"Content-Type", "application/x-ndjson"}}, json_text(answer) + "\n");
  } else {
    send_json(raw, 200, answer);
  }
}

void OllamaApi::handle_embed(net::Request& r, net::ResponseWriter& raw, bool legacy) {
  const auto started = Clock::now();
  TranslatingWriter errors(raw, ApiDialect::kOllama);
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    errors.fail(body.error());
    return;
  }
  auto request = ollama_embed_request(*body, legacy);
  if (!request.ok()) {
    errors.fail(request.error());
    return;
  }
  const std::string client_model = request->client_model;
  TranslatingWriter w(raw, ApiDialect::kOllama, nullptr, [&](const json& backend) -> Result<json> {
    return ollama_embed_answer(backend, client_model, legacy, ns_since(started));
  });
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.route = ApiRoute::kEmbeddings;
  req.model = request->model;
  req.json = &request->openai;
  req.body_changed = true;
  req.content_type = "application/json";
  req.keep_alive = request->keep_alive;
  gateway_.forward(req, w);
}

void OllamaApi::handle_tags(const net::Request& r, net::ResponseWriter& w) {
  const http::ApiKey* key = http::caller_key(r);
  json models = json::array();
  for (const auto& m : catalogue_.list(false)) {
    if ((m.type == ModelType::kLlm || m.type == ModelType::kEmbedding) &&
        (key == nullptr || key->allows_model(m.name))) {
      models.push_back(ollama_model_entry(m));
    }
  }
  send_json(w, 200, {{"models", std::move(models)}});
}

void OllamaApi::handle_show(net::Request& r, net::ResponseWriter& raw) {
  TranslatingWriter w(raw, ApiDialect::kOllama);
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    w.fail(body.error());
    return;
  }
  if (auto e = unexpected_key(*body, {"model", "name", "verbose"})) {
    w.fail(*e);
    return;
  }
  auto name = ollama_model_field(*body);
  if (!name.ok()) {
    w.fail(name.error());
    return;
  }
  if (auto refused = gateway_.refuse_model(http::caller_key(r), *name)) {
    w.fail(*refused);
    return;
  }
  auto info = catalogue_.resolve(*name);
  if (!info.ok()) {
    w.fail(info.error().code() == ErrorCode::kModelNotFound ? provisioner_.model_not_found(*name)
                                                            : info.error());
    return;
  }
  send_json(w, 200,
            ollama_show(*info, info->saved_options.inherit(router_.cli_options()).ctx_size()));
}

void OllamaApi::handle_ps(const net::Request& r, net::ResponseWriter& w) {
  const http::ApiKey* key = http::caller_key(r);
  // One entry per model (replicas together), as `ollama ps` lists them.
  std::map<std::string, int> context;  // the largest of its replicas'
  std::vector<std::string> order;
  for (const auto& s : router_.loaded()) {
    auto [it, first] = context.try_emplace(s.model_name, 0);
    if (first) {
      order.push_back(s.model_name);
    }
    int ctx = s.slot_ctx_size;
    if (ctx == 0 && s.recipe_options.is_object() && s.recipe_options.contains("ctx_size") &&
        s.recipe_options["ctx_size"].is_number_integer()) {
      ctx = s.recipe_options["ctx_size"].get<int>();
    }
    it->second = std::max(it->second, ctx);
  }
  const auto expiries = router_.keep_alive_expiries();
  json models = json::array();
  for (const auto& name : order) {
    if (key != nullptr && !key->allows_model(name)) {
      continue;
    }
    auto info = catalogue_.resolve(name);
    if (!info.ok()) {
      continue;  // unregistered since it loaded
    }
    std::optional<std::chrono::system_clock::time_point> until;
    if (auto e = expiries.find(name); e != expiries.end()) {
      until = std::chrono::system_clock::time_point(std::chrono::milliseconds(e->second));
    }
    models.push_back(ollama_running_entry(*info, context.at(name), until));
  }
  send_json(w, 200, {{"models", std::move(models)}});
}

void OllamaApi::handle_pull(net::Request& r, net::ResponseWriter& raw) {
  TranslatingWriter w(raw, ApiDialect::kOllama);
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    w.fail(body.error());
    return;
  }
  if (auto e = unexpected_key(*body, {"model", "name", "insecure", "stream"})) {
    w.fail(*e);
    return;
  }
  auto name = ollama_model_field(*body);
  if (!name.ok()) {
    w.fail(name.error());
    return;
  }
  auto insecure = bool_field(*body, "insecure", false);
  auto stream = bool_field(*body, "stream", true);
  if (!insecure.ok() || !stream.ok()) {
    w.fail(!insecure.ok() ? insecure.error() : stream.error());
    return;
  }
  if (*insecure) {
    w.fail(Error(ErrorCode::kInvalidRequest,
                 "'insecure' is not supported: downloads always verify TLS", "insecure"));
    return;
  }
  if (!catalogue_.find(*name)) {
    w.fail(provisioner_.model_not_found(*name));
    return;
  }
  auto download = store_.download(*name);
  if (!download.ok()) {
    w.fail(download.error());
    return;
  }
  const net::Headers ndjson{{"Content-Type", "application/x-ndjson"}};
  DownloadWait hooks;
  hooks.cancelled = [&raw] { return !raw.client_connected(); };
  // Ollama's stream begins with this line (its clients and Lemonade's tests
  // expect it first).
  const std::string manifest = json_text({{"status", "pulling manifest"}}) + "\n";
  if (*stream) {
    // The head goes out with the first progress, so failures found before
    // any file is fetched (hub 404/401, disk space) keep their status.
    hooks.on_progress = [&](const download::TaskProgress& p) {
      if (!raw.headers_sent()) {
        raw.begin_chunked(200, ndjson);
        raw.write_chunk(manifest);
      }
      raw.write_chunk(json_text({{"status", "pulling " + p.file},
                                 {"digest", p.file},
                                 {"total", p.file_bytes_total},
                                 {"completed", p.file_bytes_done}}) +
                      "\n");
    };
  }
  Status done = store_.wait(*download, hooks);
  if (!done.ok()) {
    if (done.error().code() == ErrorCode::kCancelled && raw.headers_sent()) {
      raw.finish();
    } else {
      w.fail(done.error());
    }
    return;
  }
  const std::string success = json_text({{"status", "success"}});
  if (!*stream) {
    raw.send(200, json_headers(), success);
  } else if (raw.headers_sent()) {
    raw.write_chunk(success + "\n");
    raw.finish();
  } else {
    raw.send(200, ndjson, manifest + success + "\n");  // nothing was left to fetch
  }
}

void OllamaApi::handle_delete(net::Request& r, net::ResponseWriter& raw) {
  TranslatingWriter w(raw, ApiDialect::kOllama);
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    w.fail(body.error());
    return;
  }
  if (auto e = unexpected_key(*body, {"model", "name"})) {
    w.fail(*e);
    return;
  }
  auto name = ollama_model_field(*body);
  if (!name.ok()) {
    w.fail(name.error());
    return;
  }
  // The same steps as POST /api/v1/delete (block loads, unload, remove the
  // files); its errors come out in Ollama's shape with the table's status
  // (404 for a model Ollama would not know, where Lemonade's route says 422).
  if (Status deleted = provisioner_.remove(*name); !deleted.ok()) {
    w.fail(deleted.error());
    return;
  }
  send_json(w, 200, {{"status", "success"}, {"message", "Deleted model: " + *name}});
}

}  // namespace lemon::api
