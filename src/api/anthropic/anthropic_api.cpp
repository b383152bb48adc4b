#include "lemon/api/anthropic/anthropic_api.h"

#include "lemon/api/anthropic/anthropic_answer.h"
#include "lemon/api/anthropic/anthropic_request.h"
#include "lemon/http/caller.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/inference/translating_writer.h"

namespace lemon::api {

using http::ApiDialect;
using inference::InferenceRequest;
using inference::TranslatingWriter;

AnthropicApi::AnthropicApi(inference::InferenceGateway& gateway) : gateway_(gateway) {}

void AnthropicApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  routes.route(
      "POST", "messages", RouteAccess::kJsonPost, Scope::kInference,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_messages(r, w); },
      ApiDialect::kAnthropic);
  routes.route(
      "POST", "messages/count_tokens", RouteAccess::kJsonPost, Scope::kInference,
      [this](net::Request& r, net::ResponseWriter& w, P) { handle_count_tokens(r, w); },
      ApiDialect::kAnthropic);
}

void AnthropicApi::handle_messages(net::Request& r, net::ResponseWriter& raw) {
  TranslatingWriter errors(raw, ApiDialect::kAnthropic);
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    errors.fail(body.error());
    return;
  }
  auto request = anthropic_to_chat(*body);
  if (!request.ok()) {
    errors.fail(request.error());
    return;
  }
  AnthropicAnswer answer(request->model, AnthropicAnswer::new_id(),
                         std::move(request->stop_sequences), request->stream);
  TranslatingWriter w(raw, ApiDialect::kAnthropic, &answer);
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.route = ApiRoute::kChatCompletions;
  req.model = request->model;
  req.stream = true;  // the backend always streams; see chat_answer.h
  req.json = &request->chat;
  req.body_changed = true;
  req.content_type = "application/json";
  req.images_field = request->has_images ? "messages" : "";
  req.translating = &w;
  gateway_.forward(req, w);
}

void AnthropicApi::handle_count_tokens(net::Request& r, net::ResponseWriter& raw) {
  TranslatingWriter errors(raw, ApiDialect::kAnthropic);
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    errors.fail(body.error());
    return;
  }
  auto request = anthropic_count_tokens_text(*body);
  if (!request.ok()) {
    errors.fail(request.error());
    return;
  }
  // llama-server's POST /tokenize; a recipe without it answers a 400
  // naming the recipe (the gateway: "tokenize is not supported by
  // recipe ...").
  nlohmann::json tokenize = {{"content", request->text}, {"add_special", true}};
  TranslatingWriter w(raw, ApiDialect::kAnthropic, nullptr,
                      [](const nlohmann::json& backend) -> Result<nlohmann::json> {
                        auto tokens = backend.find("tokens");
                        if (tokens == backend.end() || !tokens->is_array()) {
                          return Error(ErrorCode::kUpstreamProtocol,
                                       "the backend's /tokenize answer has no 'tokens' array");
                        }
                        return nlohmann::json{{"input_tokens", tokens->size()}};
                      });
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.route = ApiRoute::kTokenize;
  req.model = request->model;
  req.json = &tokenize;
  req.body_changed = true;
  req.content_type = "application/json";
  gateway_.forward(req, w);
}

}  // namespace lemon::api
