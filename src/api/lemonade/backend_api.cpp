#include "lemon/api/lemonade/backend_api.h"

#include "lemon/backends/server_factory.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "progress_response.h"

namespace lemon::api {

namespace {

struct BackendRequest {
  std::string recipe;
  std::string backend;
  bool stream = false;
};

Result<BackendRequest> parse_backend_request(std::string_view text) {
  auto body = parse_json_object(text);
  if (!body.ok()) {
    return std::move(body).error();
  }
  BackendRequest req;
  for (auto [field, out] : {std::pair{"recipe", &req.recipe}, std::pair{"backend", &req.backend}}) {
    auto value = string_field(*body, field, true);
    if (!value.ok()) {
      return std::move(value).error();
    }
    if (value->empty()) {
      return Error(ErrorCode::kInvalidRequest, std::string("'") + field + "' is required", field);
    }
    *out = std::move(value).value();
  }
  auto stream = bool_field(*body, "stream", false);
  if (!stream.ok()) {
    return std::move(stream).error();
  }
  req.stream = *stream;
  return req;
}

}  // namespace

BackendApi::BackendApi(BackendInstaller& installer, Router& router)
    : installer_(installer), router_(router) {}

void BackendApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  routes.route("POST", "install", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_install(r, w); });
  routes.route("POST", "uninstall", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_uninstall(r, w); });
}

void BackendApi::handle_install(net::Request& r, net::ResponseWriter& w) {
  auto req = parse_backend_request(r.body);
  if (wrote_error(w, req)) {
    return;
  }
  auto install = installer_.install(req->recipe, req->backend);
  if (wrote_error(w, install)) {
    return;
  }
  respond_when_done(w, req->stream,
                    [&](download::FollowHooks& hooks) { return installer_.wait(*install, hooks); },
                    {{"status", "success"}, {"recipe", req->recipe}, {"backend", req->backend}});
}

void BackendApi::handle_uninstall(net::Request& r, net::ResponseWriter& w) {
  auto req = parse_backend_request(r.body);
  if (wrote_error(w, req)) {
    return;
  }
  if (installer_.installing(req->recipe, req->backend)) {
    write_error(w, Error(ErrorCode::kConflict,
                         req->recipe + ":" + req->backend + " is being installed", "backend"));
    return;
  }
  // Models running on this backend go first, each after it drains.
  for (const auto& loaded : router_.loaded()) {
    if (loaded.recipe != req->recipe) {
      continue;
    }
    auto options = RecipeOptions::from_json(loaded.recipe, loaded.recipe_options);
    if (options.ok() && backend_for(loaded.recipe, *options) != req->backend) {
      continue;
    }
    if (Status unloaded = router_.unload(loaded.model_name);
        !unloaded.ok() && unloaded.error().code() != ErrorCode::kModelNotLoaded) {
      write_error(w, unloaded.error());
      return;
    }
  }
  if (wrote_error(w, installer_.uninstall(req->recipe, req->backend))) {
    return;
  }
  w.send(200, json_headers(),
         nlohmann::json{{"status", "success"}, {"recipe", req->recipe}, {"backend", req->backend}}
             .dump());
}

}  // namespace lemon::api
