// Inference routes: validate the body, then run_inference() does the model
// lookup, type check, auto-load and forwarding for every route alike.
#include "lemon/http/api_server.h"
#include "lemon/http/error_response.h"
#include "lemon/http/inference_proxy.h"
#include "lemon/http/json_request.h"

namespace lemon::http {
namespace {

Status check_messages(const nlohmann::json& body) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty()) {
    return Error(ErrorCode::kInvalidRequest, "'messages' must be a non-empty array", "messages");
  }
  for (const auto& m : *it) {
    if (!m.is_object()) {
      return Error(ErrorCode::kInvalidRequest, "each entry of 'messages' must be an object",
                   "messages");
    }
  }
  return ok_status();
}

Status check_prompt(const nlohmann::json& body) {
  auto it = body.find("prompt");
  if (it == body.end() || !(it->is_string() || it->is_array())) {
    return Error(ErrorCode::kInvalidRequest, "'prompt' must be a string or an array", "prompt");
  }
  return ok_status();
}

// OpenAI's newer name for max_tokens; backends know max_tokens.
bool map_max_completion_tokens(nlohmann::json& body) {
  auto it = body.find("max_completion_tokens");
  if (it == body.end() || it->is_null() || body.contains("max_tokens")) {
    return false;
  }
  body["max_tokens"] = *it;
  return true;
}

}  // namespace

void ApiServer::handle_chat(Request& r, ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    write_error(w, body.error());
    return;
  }
  if (auto ok = check_messages(*body); !ok.ok()) {
    write_error(w, ok.error());
    return;
  }
  run_inference(ApiRoute::kChatCompletions, *body, r, w);
}

void ApiServer::handle_completions(Request& r, ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    write_error(w, body.error());
    return;
  }
  if (auto ok = check_prompt(*body); !ok.ok()) {
    write_error(w, ok.error());
    return;
  }
  run_inference(ApiRoute::kCompletions, *body, r, w);
}

void ApiServer::run_inference(ApiRoute route, nlohmann::json& body, Request& r, ResponseWriter& w) {
  auto model = string_field(body, "model", true);
  if (!model.ok()) {
    write_error(w, model.error());
    return;
  }
  auto stream = bool_field(body, "stream", false);
  if (!stream.ok()) {
    write_error(w, stream.error());
    return;
  }
  auto info = catalogue_.find(*model);
  if (!info) {
    auto some = catalogue_.some_available_names(3);
    std::string message = "model '" + *model + "' was not found";
    for (std::size_t i = 0; i < some.size(); ++i) {
      message += (i == 0 ? "; available models include " : ", ") + some[i];
    }
    write_error(w, Error(ErrorCode::kModelNotFound, message, "model"));
    return;
  }
  ModelType needed = model_type_for_route(route);
  if (info->type != needed) {
    write_error(w,
                Error(ErrorCode::kUnsupportedOperation,
                      "model '" + *model + "' is a " + model_type_name(info->type) + " model; " +
                          api_route_name(route) + " needs a " + model_type_name(needed) + " model",
                      "model"));
    return;
  }
  const bool rewritten = map_max_completion_tokens(body);

  WaitHooks hooks;
  hooks.tick_interval = settings_.keepalive_interval;
  hooks.cancelled = [&w] { return !w.client_connected(); };
  if (*stream) {
    // Keep a streaming client informed while its model loads.
    hooks.on_tick = [&w] {
      if (!w.headers_sent()) {
        w.begin_chunked(200, Headers{{"Content-Type", "text/event-stream"},
                                     {"Cache-Control", "no-cache"},
                                     {"X-Accel-Buffering", "no"}});
      }
      w.write_chunk(": loading\n\n");
    };
  }
  auto lease = router_.acquire(*model, hooks);
  if (!lease.ok()) {
    if (lease.error().code() != ErrorCode::kCancelled) {
      write_error(w, lease.error());
    }
    return;
  }
  WrappedServer& server = lease->server();
  auto path = server.upstream_path(route);
  if (!path) {
    write_error(w, Error(ErrorCode::kUnsupportedOperation,
                         std::string(api_route_name(route)) + " is not supported by recipe '" +
                             server.model().recipe + "'",
                         "model"));
    return;
  }
  std::string owned_body;
  if (auto custom = server.rewrite_body(route, body)) {
    owned_body = std::move(*custom);
  } else if (rewritten) {
    owned_body = body.dump();
  }
  ProxyCall call;
  call.path = *path;
  call.body =
      rewritten || !owned_body.empty() ? std::string_view(owned_body) : std::string_view(r.body);
  call.stream = *stream;
  call.append_done = route != ApiRoute::kResponses;
  forward_to_backend(*lease, call, w, stats_);
}

}  // namespace lemon::http
