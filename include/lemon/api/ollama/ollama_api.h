// OllamaApi: the Ollama API's room, at the
// root paths Ollama uses (/api/chat, /api/generate, ...; Lemonade's own
// routes live under /api/v1/ and /api/v0/, so nothing collides). Chat,
// generate and the embeddings go through the InferenceGateway like the
// OpenAI routes, with a TranslatingWriter that writes Ollama's NDJSON and
// error shape (ollama_answer.h, api_dialect.h); the model routes read the
// catalogue, the router and the model store.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "lemon/http/api_routes.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/model_store.h"
#include "lemon/net/server.h"
#include "lemon/router/router.h"

namespace lemon::api {

class OllamaApi {
 public:
  OllamaApi(const ModelCatalogue& catalogue, ModelStore& store, Router& router,
            inference::ModelProvisioner& provisioner, inference::InferenceGateway& gateway);

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_chat(net::Request& r, net::ResponseWriter& w, bool generate);
  void handle_embed(net::Request& r, net::ResponseWriter& w, bool legacy);
  void handle_tags(const net::Request& r, net::ResponseWriter& w);
  void handle_show(net::Request& r, net::ResponseWriter& w);
  void handle_ps(const net::Request& r, net::ResponseWriter& w);
  void handle_pull(net::Request& r, net::ResponseWriter& w);
  void handle_delete(net::Request& r, net::ResponseWriter& w);
  // An empty chat or prompt: loads the model (or, with keep_alive 0,
  // unloads it) and answers done_reason "load" or "unload".
  void load_only(const std::string& model, const std::string& client_model, bool generate,
                 bool stream, std::optional<std::chrono::milliseconds> keep_alive,
                 net::ResponseWriter& w);

  const ModelCatalogue& catalogue_;
  ModelStore& store_;
  Router& router_;
  inference::ModelProvisioner& provisioner_;
  inference::InferenceGateway& gateway_;
};

}  // namespace lemon::api
