#include "lemon/api/openai/openai_api.h"

#include <optional>

#include "lemon/api/openai/embedding_format.h"
#include "lemon/api/openai/image_form.h"
#include "lemon/api/openai/request_checks.h"
#include "lemon/api/openai/rerank_format.h"
#include "lemon/api/openai/transcription_form.h"
#include "lemon/core/duration_text.h"
#include "lemon/http/autoload_param.h"
#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/json_request.h"
#include "lemon/http/multipart.h"

namespace lemon::api {

using http::bool_field;
using http::multipart_boundary;
using http::MultipartPart;
using http::parse_json_object;
using http::parse_multipart;
using http::RouteAccess;
using http::Scope;
using http::string_field;
using http::write_error;
using inference::InferenceRequest;

OpenAiApi::OpenAiApi(const ModelCatalogue& catalogue, inference::ModelProvisioner& provisioner,
                     inference::InferenceGateway& gateway)
    : catalogue_(catalogue), provisioner_(provisioner), gateway_(gateway) {}

void OpenAiApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  const std::pair<const char*, ApiRoute> json_routes[] = {
      {"chat/completions", ApiRoute::kChatCompletions},
      {"completions", ApiRoute::kCompletions},
      {"responses", ApiRoute::kResponses},
      {"embeddings", ApiRoute::kEmbeddings},
      {"reranking", ApiRoute::kReranking},
      {"rerank", ApiRoute::kReranking},
      {"reranker", ApiRoute::kReranking},
      {"images/generations", ApiRoute::kImageGenerations},
  };
  for (const auto& [path, api] : json_routes) {
    ApiRoute which = api;
    routes.route("POST", path, RouteAccess::kJsonPost, Scope::kInference,
                 [this, which](net::Request& r, net::ResponseWriter& w, P) {
                   handle_json_inference(which, r, w);
                 });
  }
  routes.route("POST", "audio/transcriptions", RouteAccess::kMultipartPost, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_transcription(r, w); });
  routes.route("POST", "images/edits", RouteAccess::kMultipartPost, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P) {
                 handle_image_form(ApiRoute::kImageEdits, r, w);
               });
  routes.route("POST", "images/variations", RouteAccess::kMultipartPost, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P) {
                 handle_image_form(ApiRoute::kImageVariations, r, w);
               });
  routes.route("POST", "audio/speech", RouteAccess::kJsonPost, Scope::kInference,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_speech(r, w); });
}

void OpenAiApi::handle_json_inference(ApiRoute route, net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    write_error(w, body.error());
    return;
  }
  auto model = string_field(*body, "model", true);
  if (!model.ok()) {
    write_error(w, model.error());
    return;
  }
  auto stream = bool_field(*body, "stream", false);
  if (!stream.ok()) {
    write_error(w, stream.error());
    return;
  }
  if (auto checked = check_request(route, *body); !checked.ok()) {
    write_error(w, checked.error());
    return;
  }
  if (*stream && (route == ApiRoute::kEmbeddings || route == ApiRoute::kReranking ||
                  route == ApiRoute::kImageGenerations)) {
    write_error(
        w, Error(ErrorCode::kInvalidRequest,
                 std::string("'stream' is not supported on ") + api_route_name(route), "stream"));
    return;
  }
  InferenceRequest req;
  req.key = http::caller_key(r);
  if (auto ka = body->find("keep_alive"); ka != body->end()) {
    std::optional<KeepAlive> parsed;
    if (ka->is_number()) {
      parsed = parse_keep_alive_seconds(ka->get<double>());
    } else if (ka->is_string()) {
      parsed = parse_keep_alive(ka->get<std::string>());
    }
    if (!parsed) {
      write_error(w, Error(ErrorCode::kInvalidRequest,
                           "'keep_alive' must be seconds or a duration such as \"5m\" "
                           "(-1: keep loaded, 0: unload when idle)",
                           "keep_alive"));
      return;
    }
    req.keep_alive = *parsed;
  }
  req.route = route;
  req.model = *model;
  req.stream = *stream;
  req.autoload = http::autoload_param(r);
  req.json = &*body;
  req.body_changed = map_max_completion_tokens(*body);
  req.raw_body = r.body;
  req.content_type = "application/json";
  if (route == ApiRoute::kEmbeddings && body->value("encoding_format", "float") == "base64") {
    req.transform = [](std::string_view answer) { return embeddings_as_base64(answer); };
  } else if (route == ApiRoute::kReranking) {
    req.transform = [](std::string_view answer) { return rerank_in_input_order(answer); };
  }
  gateway_.forward(req, w);
}

void OpenAiApi::handle_transcription(net::Request& r, net::ResponseWriter& w) {
  auto content_type = r.headers.get("Content-Type").value_or("");
  auto boundary = multipart_boundary(content_type);
  if (!boundary) {
    write_error(w, Error(ErrorCode::kInvalidRequest,
                         "audio/transcriptions takes multipart/form-data with a boundary"));
    return;
  }
  auto parts = parse_multipart(r.body, *boundary);
  if (!parts.ok()) {
    write_error(w, parts.error());
    return;
  }
  if (auto checked = check_transcription_form(*parts); !checked.ok()) {
    write_error(w, checked.error());
    return;
  }
  const MultipartPart* model = find_part(*parts, "model");
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.answer_content_type = transcription_content_type(*parts);
  std::vector<FormField> fields;
  fields.reserve(parts->size());
  for (const auto& p : *parts) {
    fields.push_back({p.name, p.filename, p.content_type, p.data, nullptr});
  }
  req.route = ApiRoute::kTranscriptions;
  req.model = std::string(model->data);
  req.raw_body = r.body;
  req.content_type = std::string(content_type);
  req.form = &fields;
  gateway_.forward(req, w);
}

void OpenAiApi::handle_image_form(ApiRoute route, net::Request& r, net::ResponseWriter& w) {
  auto content_type = r.headers.get("Content-Type").value_or("");
  auto boundary = multipart_boundary(content_type);
  if (!boundary) {
    write_error(w, Error(ErrorCode::kInvalidRequest, std::string(api_route_name(route)) +
                                                         " takes multipart/form-data with a "
                                                         "boundary"));
    return;
  }
  auto parts = parse_multipart(r.body, *boundary);
  if (!parts.ok()) {
    write_error(w, parts.error());
    return;
  }
  if (auto s = check_image_form(route, *parts); !s.ok()) {
    write_error(w, s.error());
    return;
  }
  const MultipartPart* model = find_part(*parts, "model");
  std::vector<FormField> fields;
  fields.reserve(parts->size());
  for (const auto& p : *parts) {
    fields.push_back({p.name, p.filename, p.content_type, p.data, nullptr});
  }
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.route = route;
  req.model = std::string(model->data);
  req.raw_body = r.body;
  req.content_type = std::string(content_type);
  req.form = &fields;
  gateway_.forward(req, w);
}

void OpenAiApi::handle_speech(net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    write_error(w, body.error());
    return;
  }
  auto model = string_field(*body, "model", true);
  if (!model.ok()) {
    write_error(w, model.error());
    return;
  }
  auto input = string_field(*body, "input", true);
  if (!input.ok()) {
    write_error(w, input.error());
    return;
  }
  if (!catalogue_.find(*model)) {
    write_error(w, provisioner_.model_not_found(*model));
    return;
  }
  write_error(w, Error(ErrorCode::kUnsupportedOperation,
                       "audio/speech is not supported: no recipe of this router serves "
                       "text-to-speech (Lemonade's kokoro recipe is not available), and '" +
                           *model + "' is not a speech model",
                       "model"));
}

}  // namespace lemon::api
