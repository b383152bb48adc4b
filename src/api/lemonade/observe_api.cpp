#include "lemon/api/lemonade/observe_api.h"

#include <unistd.h>

#include <chrono>
#include <csignal>

#include "lemon/api/lemonade/log_socket.h"
#include "lemon/core/log.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"

namespace lemon::api {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kHeartbeat = std::chrono::seconds(1);
constexpr std::size_t kDefaultLogTail = 100;

net::Headers event_stream_headers() {
  return net::Headers{{"Content-Type", "text/event-stream"},
                      {"Cache-Control", "no-cache"},
                      {"X-Accel-Buffering", "no"}};
}

// Last-Event-ID (an SSE reconnect) or ?since=N: the id to resume after.
Result<std::optional<std::uint64_t>> resume_after(const net::Request& r) {
  std::optional<std::string> text;
  if (auto h = r.headers.get("Last-Event-ID")) {
    text = std::string(*h);
  } else if (auto q = r.query_param("since")) {
    text = *q;
  }
  if (!text) {
    return std::optional<std::uint64_t>();
  }
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno != 0 || (*text)[0] == '-') {
    return Error(ErrorCode::kInvalidRequest, "'since' (or Last-Event-ID) must be an event id",
                 "since");
  }
  return std::optional<std::uint64_t>(v);
}

Result<std::size_t> count_param(const net::Request& r, const char* name, std::size_t fallback,
                                std::size_t max) {
  auto q = r.query_param(name);
  if (!q) {
    return fallback;
  }
  char* end = nullptr;
  long v = std::strtol(q->c_str(), &end, 10);
  if (q->empty() || *end != '\0' || v < 0) {
    return Error(ErrorCode::kInvalidRequest, std::string("'") + name + "' must be a count", name);
  }
  return std::min<std::size_t>(static_cast<std::size_t>(v), max);
}

}  // namespace

ObserveApi::ObserveApi(telemetry::TelemetryHub& hub, telemetry::ContextMonitor& context,
                       telemetry::SystemStatsReader& system, const Router& router,
                       inference::GenerationDefaults& defaults, const http::ServingStatus& serving)
    : hub_(hub),
      context_(context),
      system_(system),
      router_(router),
      defaults_(defaults),
      serving_(serving) {}

void ObserveApi::register_routes(http::ApiRoutes& routes) {
  using P = std::string_view;
  const auto metrics = [this](net::Request& r, net::ResponseWriter& w, P) {
    if (model_metrics_ && model_metrics_(r, w)) {
      return;
    }
    handle_metrics(w);
  };
  const auto params = [this](net::Request& r, net::ResponseWriter& w, P) { handle_params(r, w); };
  routes.route("GET", "metrics", RouteAccess::kMetrics, Scope::kRead, metrics);
  routes.route("GET", "events", RouteAccess::kRead, Scope::kRead,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_events(r, w); });
  routes.route("GET", "logs/stream", RouteAccess::kRead, Scope::kRead,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_logs_stream(r, w); });
  // The same lines over WebSocket (Lemonade 11's log window): an upgrade of
  // the same path, and of /logs/stream at the root.
  routes.websocket("logs/stream", log_socket_route(hub_.logs()));
  routes.route("GET", "system-stats", RouteAccess::kRead, Scope::kRead,
               [this](net::Request&, net::ResponseWriter& w, P) {
                 send_json(w, 200, system_.read().to_json());
               });
  routes.route("POST", "log-level", RouteAccess::kJsonPost, Scope::kAdmin,
               [this](net::Request& r, net::ResponseWriter& w, P) { handle_log_level(r, w); });
  routes.route("POST", "params", RouteAccess::kJsonPost, Scope::kAdmin, params);
  routes.route("GET", "params", RouteAccess::kRead, Scope::kRead, params);
  // Prometheus looks at the root by default.
  routes.root("GET", "/metrics", RouteAccess::kMetrics, Scope::kRead, metrics);
  routes.root("POST", "/internal/shutdown", RouteAccess::kJsonPost, Scope::kAdmin,
              [](net::Request&, net::ResponseWriter& w, P) {
                send_json(w, 200, {{"status", "shutting down"}});
                // The same graceful drain as SIGTERM (the signal thread runs it).
                ::kill(::getpid(), SIGTERM);
              });
}

template <typename Follower, typename Frame>
void ObserveApi::stream_follower(net::ResponseWriter& w, Follower& follower, const Frame& frame) {
  if (!w.begin_chunked(200, event_stream_headers()) || !w.write_chunk("retry: 2000\n\n")) {
    return;
  }

  auto last_write = Clock::now();
  for (;;) {
    auto items = follower.next(std::chrono::milliseconds(250));
    std::string out;
    for (const auto& item : items) {
      out += frame(item);
    }
    if (follower.dropped()) {
      // Too slow to keep up: end the stream; the client may resume with
      // Last-Event-ID from what it has seen.
      w.write_chunk(out + ": dropped: this client fell too far behind\n\n");
      break;
    }
    if (!out.empty()) {
      if (!w.write_chunk(out)) {
        return;
      }
      last_write = Clock::now();
    } else if (Clock::now() - last_write >= kHeartbeat) {
      if (!w.write_chunk(": heartbeat\n\n")) {
        return;
      }
      last_write = Clock::now();
    }
    if (follower.closed() || serving_.draining() || !w.client_connected()) {
      break;
    }
  }
  w.finish();
}

void ObserveApi::handle_metrics(net::ResponseWriter& w) {
  std::map<std::string, double> kv;
  for (const auto& [model, c] : context_.current(std::chrono::seconds(1))) {
    kv[model] = c.fraction();
  }
  telemetry::ServerGauges gauges;
  gauges.open_connections = serving_.open_connections();
  gauges.open_streams = serving_.open_streams();
  // Lemonade 11's first family: scrapers (and its app) read it to tell that
  // a Lemonade server answers.
  std::string text =
      "# HELP lemonade_server_up Whether the server is up (always 1).\n"
      "# TYPE lemonade_server_up gauge\nlemonade_server_up 1\n";
  text += hub_.render(*router_.view(), router_.limits(), gauges, kv);
  if (remote_ != nullptr) {
    text += remote_->metrics_text();
  }
  w.send(200, net::Headers{{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}}, text);
}

void ObserveApi::handle_events(net::Request& r, net::ResponseWriter& w) {
  if (r.method == "HEAD") {
    w.send(200, event_stream_headers(), "");
    return;
  }
  auto after = resume_after(r);
  if (wrote_error(w, after)) {
    return;
  }
  auto backlog = count_param(r, "backlog", 0, 1000);
  if (wrote_error(w, backlog)) {
    return;
  }
  auto follower = hub_.events().follow(*after, *backlog);
  stream_follower(w, *follower, [](const telemetry::EventBus::Stream::Item& item) {
    return telemetry::event_sse_frame(item.id, *item.value);
  });
}

void ObserveApi::handle_logs_stream(net::Request& r, net::ResponseWriter& w) {
  if (r.method == "HEAD") {
    w.send(200, event_stream_headers(), "");
    return;
  }
  auto after = resume_after(r);
  if (wrote_error(w, after)) {
    return;
  }
  auto tail = count_param(r, "tail", kDefaultLogTail, telemetry::LogRing::kKeptLines);
  if (wrote_error(w, tail)) {
    return;
  }
  const std::string model = r.query_param("model").value_or("");
  const std::string format = r.query_param("format").value_or("text");
  if (format != "text" && format != "json") {
    write_error(w, Error(ErrorCode::kInvalidRequest, "'format' must be text or json", "format"));
    return;
  }
  const bool json = format == "json";
  auto follower = hub_.logs().follow(*after, *tail);
  stream_follower(w, *follower, [&](const telemetry::LogRing::Stream::Item& item) -> std::string {
    const telemetry::LogLine& line = *item.value;
    if (!model.empty() && line.model != model) {
      return {};
    }
    std::string text = json ? json_text(line.to_json(item.id)) : line.formatted();
    // One SSE event per line; a line break inside a log line starts another
    // data: line of the same event.
    std::string frame = "id: " + std::to_string(item.id) + "\ndata: ";
    for (char c : text) {
      if (c == '\n') {
        frame += "\ndata: ";
      } else if (c != '\r') {
        frame += c;
      }
    }
    frame += "\n\n";
    return frame;
  });
}

void ObserveApi::handle_log_level(net::Request& r, net::ResponseWriter& w) {
  auto body = parse_json_object(r.body);
  if (wrote_error(w, body)) {
    return;
  }
  auto level = string_field(*body, "level", true);
  if (wrote_error(w, level)) {
    return;
  }
  if (!is_valid_log_level(*level)) {
    write_error(
        w, Error(ErrorCode::kInvalidRequest,
                 "'level' must be one of critical, error, warning, info, debug, trace", "level"));
    return;
  }
  set_log_level(*level);
  logger("app")->info("log level set to {}", *level);
  hub_.events().publish("log_level", {{"level", *level}});
  send_json(w, 200, {{"status", "success"}, {"level", *level}});
}

void ObserveApi::handle_params(net::Request& r, net::ResponseWriter& w) {
  if (r.method == "GET" || r.method == "HEAD") {
    send_json(w, 200, {{"params", defaults_.get()}});
    return;
  }
  nlohmann::json changes = nlohmann::json::object();
  if (r.body.find_first_not_of(" \t\r\n") != std::string::npos) {
    auto body = parse_json_object(r.body);
    if (wrote_error(w, body)) {
      return;
    }
    changes = std::move(body).value();
  }
  auto updated = defaults_.update(changes);
  if (wrote_error(w, updated)) {
    return;
  }
  send_json(w, 200, {{"status", "success"}, {"params", *updated}});
}

}  // namespace lemon::api
