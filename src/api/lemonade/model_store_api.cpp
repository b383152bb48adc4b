#include "lemon/api/lemonade/model_store_api.h"

#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/inference/inference_proxy.h"
#include "lemon/models/cache_cleanup.h"
#include "lemon/models/collection_registration.h"
#include "lemon/models/local_import.h"
#include "lemon/models/user_registration.h"
#include "progress_response.h"

namespace lemon::api {

using http::error_headers;

void ModelStoreApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  routes.route("POST", "pull", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_pull(r, w); });
  routes.route("POST", "delete", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_delete(r, w); });
  const auto answer = [](net::ResponseWriter& w, const Result<nlohmann::json>& result) {
    if (wrote_error(w, result)) {
      return;
    }
    send_json(w, 200, *result);
  };
  routes.route("GET", "registry/search", RouteAccess::kRead, Scope::kRead,
               [this, answer](net::Request& r, net::ResponseWriter& w, P) {
                 auto query = r.query_param("query");
                 if (!query) {
                   query = r.query_param("q");
                 }
                 const auto format = r.query_param("format").value_or("gguf");
                 if (format != "gguf") {
                   write_error(w, Error(ErrorCode::kInvalidRequest,
                                        "unsupported registry search format '" + format +
                                            "' (expected 'gguf')",
                                        "format"));
                   return;
                 }
                 int limit = 12;
                 if (auto text = r.query_param("limit")) {
                   try {
                     std::size_t used = 0;
                     limit = std::stoi(*text, &used);
                     limit = used == text->size() ? limit : 0;
                   } catch (const std::exception&) {
                     limit = 0;
                   }
                 }
                 answer(w, registry_.search(query.value_or(""), limit,
                                            r.query_param("source").value_or(default_source_)));
               });
  routes.route(
      "GET", "pull/variants", RouteAccess::kRead, Scope::kRead,
      [this, answer](net::Request& r, net::ResponseWriter& w, P) {
        auto checkpoint = r.query_param("checkpoint");
        if (!checkpoint) {
          write_error(w, Error(ErrorCode::kInvalidRequest,
                               "missing required query parameter 'checkpoint'", "checkpoint"));
          return;
        }
        answer(w,
               registry_.variants(*checkpoint, r.query_param("source").value_or(default_source_)));
      });
  routes.root("POST", "/internal/cleanup-cache", RouteAccess::kJsonPost, Scope::kAdmin,
              [this](net::Request& r, net::ResponseWriter& w, P) {
                auto body = parse_json_object(r.body.empty() ? std::string_view("{}") : r.body);
                if (wrote_error(w, body)) {
                  return;
                }
                auto dry_run = bool_field(*body, "dry_run", true);
                if (wrote_error(w, dry_run)) {
                  return;
                }
                send_json(w, 200,
                          cleanup_orphaned_files(catalogue_.registered(),
                                                 catalogue_.sources().hf_hub_cache, *dry_run));
              });
  routes.route("POST", "models/check-updates", RouteAccess::kJsonPost, Scope::kAdmin,
               [this, answer](net::Request&, net::ResponseWriter& w, P) {
                 answer(w, registry_.check_updates());
               });
  routes.route(
      "GET", "downloads", RouteAccess::kRead, Scope::kRead,
      [this](net::Request&, net::ResponseWriter& w, P) { send_json(w, 200, jobs_.list()); });
  routes.route("POST", "downloads/control", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) {
                 auto body = parse_json_object(r.body);
                 if (wrote_error(w, body)) {
                   return;
                 }
                 auto id = string_field(*body, "id", true);
                 auto action = string_field(*body, "action", true);
                 if (!id.ok() || !action.ok()) {
                   write_error(w, !id.ok() ? id.error() : action.error());
                   return;
                 }
                 auto done = jobs_.control(*id, *action);
                 if (wrote_error(w, done)) {
                   return;
                 }
                 send_json(w, 200, *done);
               });
}

void ModelStoreApi::handle_pull(net::Request& r, net::ResponseWriter& w) {
  auto request = parse_model_request(r.body);
  if (wrote_error(w, request)) {
    return;
  }
  const nlohmann::json& body = request->body;
  const std::string& name = request->model;
  auto stream = bool_field(body, "stream", false);
  if (wrote_error(w, stream)) {
    return;
  }
  auto local = bool_field(body, "local_import", false);
  if (wrote_error(w, local)) {
    return;
  }
  if (is_collection_registration(body)) {
    register_collection(name, body, *stream, w);
    return;
  }
  if (*local || has_registration_fields(body)) {
    // A local import registers the folder `lemonade-server pull user.X
    // --checkpoint /folder` copied into the hub cache (nothing to download).
    // A hub registration is kept even when the download fails, so a retry
    // needs only the name.
    auto reg = *local ? register_local_import(name, body, catalogue_.sources().hf_hub_cache)
                      : parse_user_registration(name, body);
    if (wrote_error(w, reg)) {
      return;
    }
    if (wrote_error(w, catalogue_.put_user_model(reg->key, reg->entry))) {
      return;
    }
    if (*local) {
      send_json(w, 200,
                {{"status", "success"},
                 {"model_name", name},
                 {"message", "Model imported and registered successfully"}});
      return;
    }
  } else if (!catalogue_.find(name)) {
    if (name.starts_with("user.")) {
      write_error(w, Error(ErrorCode::kModelNotFound,
                           "model '" + name +
                               "' is not registered; give 'checkpoint' and 'recipe' to register "
                               "and download it",
                           "model_name"));
    } else {
      write_error(w, provisioner_.model_not_found(name));
    }
    return;
  }
  if (auto info = catalogue_.find(name); info && info->is_collection()) {
    pull_components(*info, *stream, w);
    return;
  }

  auto subscribe = bool_field(body, "subscribe", true);
  if (wrote_error(w, subscribe)) {
    return;
  }
  if (*stream && !*subscribe) {
    // Lemonade 11: the router owns the pull; the client may go away and
    // follow it through GET downloads.
    auto job = jobs_.start(catalogue_.internal_name(name).value_or(name));
    if (wrote_error(w, job)) {
      return;
    }
    send_json(w, 200, *job);
    return;
  }
  auto download = store_.download(name);
  if (wrote_error(w, download)) {
    return;
  }
  respond_when_done(w, *stream,
                    [&](download::FollowHooks& hooks) { return store_.wait(*download, hooks); },
                    {{"status", "success"}, {"model_name", name}});
}

namespace {

// Lemonade 9.4.1 answers 422 for a delete it cannot do: a model it does not
// know, or one whose files it does not manage; its clients and published
// tests check for that status. The code stays ours.
int lemonade_delete_status(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kModelNotFound:
    case ErrorCode::kModelFilesMissing:
    case ErrorCode::kUnsupportedOperation:
      return 422;
    default:
      return error_status(e);
  }
}

}  // namespace

void ModelStoreApi::handle_delete(net::Request& r, net::ResponseWriter& w) {
  auto request = parse_model_request(r.body);
  if (wrote_error(w, request)) {
    return;
  }
  const std::string& name = request->model;
  if (Status deleted = provisioner_.remove(name); !deleted.ok()) {
    const Error& e = deleted.error();
    w.send(lemonade_delete_status(e), error_headers(e), error_envelope(e));
    return;
  }
  if (policies_ != nullptr) {
    policies_->forget();
  }
  send_json(w, 200, {{"status", "success"}, {"message", "Deleted model: " + name}});
}

}  // namespace lemon::api
