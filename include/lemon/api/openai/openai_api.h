// OpenAiApi: the OpenAI-compatible inference routes' room:
// chat/completions, completions, responses, embeddings, reranking (and
// rerank), images/generations, images/edits, images/variations,
// audio/transcriptions and audio/speech, under every API prefix. Each
// handler only checks its body; the InferenceGateway does the rest for
// every route alike: model lookup and type check (before anything loads),
// acquire (auto-load, keepalives, cancellation), forward.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include "lemon/backends/wrapped_server.h"
#include "lemon/http/api_routes.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/models/catalogue.h"
#include "lemon/net/server.h"

namespace lemon::api {

class OpenAiApi {
 public:
  OpenAiApi(const ModelCatalogue& catalogue, inference::ModelProvisioner& provisioner,
            inference::InferenceGateway& gateway);

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_json_inference(ApiRoute route, net::Request& r, net::ResponseWriter& w);
  void handle_transcription(net::Request& r, net::ResponseWriter& w);
  // images/edits and images/variations (multipart, like OpenAI's).
  void handle_image_form(ApiRoute route, net::Request& r, net::ResponseWriter& w);
  // audio/speech: no recipe here serves it (Lemonade's kokoro is not
  // supported); the body is checked and the model named in a clear 400.
  void handle_speech(net::Request& r, net::ResponseWriter& w);

  const ModelCatalogue& catalogue_;
  inference::ModelProvisioner& provisioner_;
  inference::InferenceGateway& gateway_;
};

}  // namespace lemon::api
