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
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/http/multipart.h"

namespace lemon::api {

using http::MultipartPart;
using inference::InferenceRequest;

namespace {

// The parts of a multipart/form-data body `route` takes.
Result<std::vector<MultipartPart>> read_form(const net::Request& r, ApiRoute route) {
  const auto boundary = http::multipart_boundary(r.headers.get("Content-Type").value_or(""));
  if (!boundary) {
    return Error(ErrorCode::kInvalidRequest,
                 std::string(api_route_name(route)) + " takes multipart/form-data with a boundary");
  }
  return http::parse_multipart(r.body, *boundary);
}

std::vector<FormField> form_fields(const std::vector<MultipartPart>& parts) {
  std::vector<FormField> fields;
  fields.reserve(parts.size());
  for (const auto& p : parts) {
    fields.push_back({p.name, p.filename, p.content_type, p.data, nullptr});
  }
  return fields;
}

}  // namespace

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
  if (wrote_error(w, body)) {
    return;
  }
  http::FieldReader in(*body);
  const std::string model = in.string("model", true);
  const bool stream = in.boolean("stream", false);
  if (wrote_error(w, in.status()) || wrote_error(w, check_request(route, *body))) {
    return;
  }
  if (stream && (route == ApiRoute::kEmbeddings || route == ApiRoute::kReranking ||
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
  req.model = model;
  req.stream = stream;
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
  auto parts = read_form(r, ApiRoute::kTranscriptions);
  if (wrote_error(w, parts) || wrote_error(w, check_transcription_form(*parts))) {
    return;
  }
  const MultipartPart* model = find_part(*parts, "model");
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.answer_content_type = transcription_content_type(*parts);
  std::vector<FormField> fields = form_fields(*parts);
  req.route = ApiRoute::kTranscriptions;
  req.model = std::string(model->data);
  req.raw_body = r.body;
  req.content_type = r.headers.get("Content-Type").value_or("");
  req.form = &fields;
  gateway_.forward(req, w);
}

void OpenAiApi::handle_image_form(ApiRoute route, net::Request& r, net::ResponseWriter& w) {
  auto parts = read_form(r, route);
  if (wrote_error(w, parts) || wrote_error(w, check_image_form(route, *parts))) {
    return;
  }
  const MultipartPart* model = find_part(*parts, "model");
  std::vector<FormField> fields = form_fields(*parts);
  InferenceRequest req;
  req.key = http::caller_key(r);
  req.route = route;
  req.model = std::string(model->data);
  req.raw_body = r.body;
  req.content_type = r.headers.get("Content-Type").value_or("");
  req.form = &fields;
  gateway_.forward(req, w);
}

void OpenAiApi::handle_speech(net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  http::FieldReader in(*body);
  const std::string model = in.string("model", true);
  in.string("input", true);
  if (wrote_error(w, in.status())) {
    return;
  }
  if (!catalogue_.find(model)) {
    write_error(w, provisioner_.model_not_found(model));
    return;
  }
  write_error(w, Error(ErrorCode::kUnsupportedOperation,
                       "audio/speech is not supported: no recipe of this router serves "
                       "text-to-speech (Lemonade's kokoro recipe is not available), and '" +
                           model + "' is not a speech model",
                       "model"));
}

}  // namespace lemon::api
