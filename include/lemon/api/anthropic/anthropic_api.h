// AnthropicApi: the Anthropic Messages API's room. POST messages and messages/count_tokens under
// every API prefix
// (/v1/messages, /api/v1/messages, ...). A request is translated into a chat
// completions request (anthropic_request.h) and goes through the
// InferenceGateway like any chat, so acquiring, auto-load, cancellation and
// stats are the same; a TranslatingWriter turns the answer and every error
// into Anthropic's shapes (anthropic_answer.h, api_dialect.h).
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include "lemon/http/api_routes.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/net/server.h"

namespace lemon::api {

class AnthropicApi {
 public:
  explicit AnthropicApi(inference::InferenceGateway& gateway);

  void register_routes(http::ApiRoutes& routes);

 private:
  void handle_messages(net::Request& r, net::ResponseWriter& raw);
  void handle_count_tokens(net::Request& r, net::ResponseWriter& raw);

  inference::InferenceGateway& gateway_;
};

}  // namespace lemon::api
