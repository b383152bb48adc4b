#include "progress_response.h"

#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"

namespace lemon::api {

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

}  // namespace lemon::api
