// Model store routes: /pull, /delete, and the download step of auto-load
// (issue #7). Streaming /pull speaks Lemonade 9.4.1's SSE events.
#include <chrono>

#include "lemon/http/api_server.h"
#include "lemon/http/error_response.h"
#include "lemon/http/inference_proxy.h"
#include "lemon/http/json_request.h"
#include "lemon/models/local_import.h"
#include "lemon/models/user_registration.h"

namespace lemon::http {
namespace {

// Lemonade's progress event data; file_index is 1-based.
nlohmann::json progress_data(const download::TaskProgress& p) {
  int percent =
      p.file_bytes_total > 0 ? static_cast<int>(p.file_bytes_done * 100 / p.file_bytes_total) : 100;
  return {{"file", p.file},
          {"file_index", p.file_index + 1},
          {"total_files", p.total_files},
          {"bytes_downloaded", p.file_bytes_done},
          {"bytes_total", p.file_bytes_total},
          {"percent", percent}};
}

std::string sse_event(const char* event, const nlohmann::json& data) {
  return std::string("event: ") + event + "\ndata: " + json_text(data) + "\n\n";
}

void begin_event_stream(net::ResponseWriter& w) {
  if (!w.headers_sent()) {
    w.begin_chunked(200, net::Headers{{"Content-Type", "text/event-stream"},
                                      {"Cache-Control", "no-cache"},
                                      {"X-Accel-Buffering", "no"}});
  }
}

}  // namespace

void respond_when_done(net::ResponseWriter& w, bool stream,
                       const std::function<Status(download::FollowHooks&)>& follow,
                       const nlohmann::json& success) {
  download::FollowHooks hooks;
  hooks.cancelled = [&w] { return !w.client_connected(); };
  int total_files = 0;
  if (stream) {
    // Headers go out with the first progress event, so failures found
    // before any file is fetched (hub 404/401, disk space) keep their status.
    hooks.on_progress = [&w, &total_files](const download::TaskProgress& p) {
      total_files = p.total_files;
      begin_event_stream(w);
      w.write_chunk(sse_event("progress", progress_data(p)));
    };
  }
  Status done = follow(hooks);
  if (!done.ok() && done.error().code() == ErrorCode::kCancelled) {
    // The client left; close the response properly all the same.
    if (w.headers_sent()) {
      w.finish();
    } else {
      write_error(w, done.error());
    }
    return;
  }
  if (!done.ok() && !w.headers_sent()) {
    write_error(w, done.error());
    return;
  }
  if (!stream) {
    w.send(200, json_headers(), success.dump());
    return;
  }
  begin_event_stream(w);
  if (done.ok()) {
    w.write_chunk(sse_event("complete", {{"file", ""},
                                         {"file_index", total_files},
                                         {"total_files", total_files},
                                         {"bytes_downloaded", 0},
                                         {"bytes_total", 0},
                                         {"percent", 100}}));
  } else {
    // "error" stays a string (Lemonade's CLI prints it); the typed fields
    // follow the envelope's names.
    ErrorShape shape = error_shape(done.error().code());
    w.write_chunk(sse_event("error", {{"error", done.error().message()},
                                      {"type", shape.type},
                                      {"code", shape.code},
                                      {"status", error_status(done.error())}}));
  }
  w.finish();
}

void ApiServer::handle_pull(net::Request& r, net::ResponseWriter& w) {
  auto request = parse_model_request(r.body);
  if (!request.ok()) {
    write_error(w, request.error());
    return;
  }
  const nlohmann::json& body = request->body;
  const std::string& name = request->model;
  auto stream = bool_field(body, "stream", false);
  if (!stream.ok()) {
    write_error(w, stream.error());
    return;
  }
  auto local = bool_field(body, "local_import", false);
  if (!local.ok()) {
    write_error(w, local.error());
    return;
  }
  if (*local || has_registration_fields(body)) {
    // A local import registers the folder `lemonade-server pull user.X
    // --checkpoint /folder` copied into the hub cache (nothing to download).
    // A hub registration is kept even when the download fails, so a retry
    // needs only the name.
    auto reg = *local ? register_local_import(name, body, catalogue_.sources().hf_hub_cache)
                      : parse_user_registration(name, body);
    if (!reg.ok()) {
      write_error(w, reg.error());
      return;
    }
    if (Status saved = catalogue_.put_user_model(reg->key, reg->entry); !saved.ok()) {
      write_error(w, saved.error());
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
      write_error(w, model_not_found(name));
    }
    return;
  }

  auto download = store_.download(name);
  if (!download.ok()) {
    write_error(w, download.error());
    return;
  }
  respond_when_done(w, *stream,
                    [&](download::FollowHooks& hooks) { return store_.wait(*download, hooks); },
                    {{"status", "success"}, {"model_name", name}});
}

namespace {

// Lemonade 9.4.1 answers 422 for a delete it cannot do: a model it does not
// know, or one whose files it does not manage; its clients and published
// tests check for that status (issue #25). The code stays ours.
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

void ApiServer::handle_delete(net::Request& r, net::ResponseWriter& w) {
  auto request = parse_model_request(r.body);
  if (!request.ok()) {
    write_error(w, request.error());
    return;
  }
  const std::string& name = request->model;
  if (Status deleted = provisioner_.remove(name); !deleted.ok()) {
    const Error& e = deleted.error();
    w.send(lemonade_delete_status(e), error_headers(e), error_envelope(e));
    return;
  }
  send_json(w, 200, {{"status", "success"}, {"message", "Deleted model: " + name}});
}

}  // namespace lemon::http
