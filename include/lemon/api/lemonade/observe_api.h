// ObserveApi: what the router shows of itself: GET metrics
// (Prometheus text; also at /metrics), events and logs/stream (SSE that
// resume from Last-Event-ID or ?since=), system-stats, POST log-level,
// GET and POST params (the sampling defaults), and POST /internal/shutdown
// (the same graceful drain as SIGTERM).
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once. Event and log streams end when their
// client leaves, falls too far behind, or the server drains.
#pragma once

#include <functional>

#include "lemon/http/api_routes.h"
#include "lemon/http/serving_status.h"
#include "lemon/inference/generation_defaults.h"
#include "lemon/net/server.h"
#include "lemon/remote/remote_models.h"
#include "lemon/router/router.h"
#include "lemon/telemetry/context_monitor.h"
#include "lemon/telemetry/system_stats.h"
#include "lemon/telemetry/telemetry_hub.h"

namespace lemon::api {

class ObserveApi {
 public:
  ObserveApi(telemetry::TelemetryHub& hub, telemetry::ContextMonitor& context,
             telemetry::SystemStatsReader& system, const Router& router,
             inference::GenerationDefaults& defaults, const http::ServingStatus& serving);

  void register_routes(http::ApiRoutes& routes);

  // /metrics' remote endpoint samples. Set before serving.
  void show_remote(const remote::RemoteModels* remote) { remote_ = remote; }
  // Who answers GET /metrics?model=X (llama-server's form: one model's
  // figures): true when it answered, false to let the whole /metrics
  // answer. Set before serving.
  using ModelMetrics = std::function<bool(net::Request&, net::ResponseWriter&)>;
  void serve_model_metrics(ModelMetrics answer) { model_metrics_ = std::move(answer); }

 private:
  void handle_metrics(net::ResponseWriter& w);
  void handle_events(net::Request& r, net::ResponseWriter& w);
  void handle_logs_stream(net::Request& r, net::ResponseWriter& w);
  void handle_log_level(net::Request& r, net::ResponseWriter& w);
  void handle_params(net::Request& r, net::ResponseWriter& w);
  // Writes `follower`'s items as SSE until the client leaves, the follower
  // is dropped (too slow) or closed (shutdown); `frame` turns an item into
  // its SSE text ("" skips it); a comment heartbeat keeps quiet streams alive.
  template <typename Follower, typename Frame>
  void stream_follower(net::ResponseWriter& w, Follower& follower, const Frame& frame);

  telemetry::TelemetryHub& hub_;
  telemetry::ContextMonitor& context_;
  telemetry::SystemStatsReader& system_;
  const Router& router_;
  inference::GenerationDefaults& defaults_;
  const http::ServingStatus& serving_;
  const remote::RemoteModels* remote_ = nullptr;
  ModelMetrics model_metrics_;
};

}  // namespace lemon::api
