// GET /models/sse: llama.cpp's model events (tools/server/server-models.cpp),
// each `data: {"model","event","data"}` with nothing else (no id, no replay),
// made from the router's event bus as it publishes.
#include "lemon/api/llamacpp/llamacpp_api.h"
#include "lemon/api/llamacpp/sse_translation.h"
#include "lemon/http/error_response.h"

namespace lemon::api {

namespace {

// A client that has heard nothing this long gets an SSE comment (which
// event parsers skip), so a gone client is noticed.
constexpr auto kKeepAlive = std::chrono::seconds(15);

}  // namespace

void LlamaCppApi::handle_sse(net::Request& r, net::ResponseWriter& w) {
  net::Headers headers;
  headers.add("Content-Type", "text/event-stream");
  headers.add("Cache-Control", "no-cache");
  headers.add("X-Accel-Buffering", "no");
  if (r.method == "HEAD") {
    w.send(200, headers, "");
    return;
  }
  auto follower = hub_.events().follow(std::nullopt, 0);
  if (!w.begin_chunked(200, headers)) {
    return;
  }
  const SseNames names{[this](const std::string& server) { return id_of_server(server); },
                       [this](const std::string& server) {
                         const auto view = router_.view();
                         for (const auto& s : view->servers) {
                           if (s.info.model_name == server) {
                             return true;
                           }
                         }
                         return false;
                       },
                       [this](const std::string& server) { return activity_.of(server).info; },
                       [this](const std::string& model) { return activity_.downloads(model); }};
  auto last_write = std::chrono::steady_clock::now();
  for (;;) {
    std::string out;
    for (const auto& item : follower->next(std::chrono::milliseconds(250))) {
      for (const auto& event : llamacpp_events(*item.value, names)) {
        out += "data: " + event.dump() + "\n\n";
      }
    }
    if (follower->dropped()) {
      w.write_chunk(out + ": dropped: this client fell too far behind\n\n");
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (out.empty() && now - last_write >= kKeepAlive) {
      out = ": keep-alive\n\n";
    }
    if (!out.empty()) {
      if (!w.write_chunk(out)) {
        return;
      }
      last_write = now;
    }
    if (follower->closed() || serving_.draining() || !w.client_connected() || stopping_) {
      break;
    }
  }
  w.finish();
}

}  // namespace lemon::api
