// TelemetryHub: the router's own observations, for /metrics, the event
// stream and the dashboard. It owns the event bus, the log
// ring and the metric families, and turns router events and finished
// requests into both.
//
// Recording a request is a few atomic adds and a shared-lock lookup of its
// series; a request event is built only while someone follows the events.
// Rendering reads the router's published view (Router::view()), never the
// router's lock, and never leases a server (the LRU clock is untouched).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/router/router.h"
#include "lemon/telemetry/event_bus.h"
#include "lemon/telemetry/log_ring.h"
#include "lemon/telemetry/metrics.h"

namespace lemon::telemetry {

// One finished API request to a model.
struct RequestRecord {
  std::string model;
  std::string route;  // "chat/completions", ...
  int status = 0;
  bool stream = false;
  double duration_s = 0.0;  // received to last byte written
  double ttft_s = 0.0;      // 0 when unknown
  int prompt_tokens = 0;
  int completion_tokens = 0;
  double tokens_per_second = 0.0;  // 0 when unknown
  std::uint64_t id = 0;            // the router's number for the request (ties progress to it)
  std::string key;                 // the caller's API key's name; "" without keys
  int draft_tokens = 0;            // speculative decoding: drafted (0: none)
  int draft_accepted_tokens = 0;   // and accepted by the model
  // The routing policy the client named, and the rule that chose `model`
  // ("default" when it fell open); "" when it named the model itself.
  std::string routed_by;
  std::string route_rule;
};

// A routing policy's decision for one request (inference's PolicyRouting).
struct RouteRecord {
  std::uint64_t id = 0;  // RequestRecord::id
  std::string policy;
  std::string rule;  // the rule id, or "default"
  std::string route_to;
  bool switched = false;  // its conversation was served by another model before
  double decide_s = 0.0;  // the decision's time, classifiers included
  struct ClassifierCall {
    std::string id;
    bool ok = false;
    double seconds = 0.0;
  };
  std::vector<ClassifierCall> classifiers;
};

// How far a backend has read a request's prompt.
struct PrefillProgress {
  std::uint64_t id = 0;  // RequestRecord::id
  std::string model;
  std::string route;
  long long tokens_done = 0;  // evaluated or found in the cache
  long long tokens_total = 0;
};

// Figures the HTTP layer knows and the router does not.
struct ServerGauges {
  int open_connections = 0;
  int open_streams = 0;
};

class TelemetryHub {
 public:
  TelemetryHub();

  EventBus& events() { return events_; }
  LogRing& logs() { return logs_; }

  // Router::on_event: events for the bus, load and eviction metrics.
  void on_router_event(const RouterEvent& event);
  void record_request(const RequestRecord& record);
  // A routing decision: lemonade_routing_decisions_total{policy,rule},
  // lemonade_routing_switches_total{policy}, the classifiers' calls and
  // times, and a `request` event of phase "routed".
  void record_route(const RouteRecord& record);
  // Per API key (labelled with the key's name, never the key):
  // a request admitted on a route of `scope`, and a refusal for `reason`
  // ("key": missing or unknown, then named "unknown"; "scope"; "model";
  // "limit").
  void count_key_request(const std::string& key, const std::string& scope);
  void count_key_refusal(const std::string& key, const std::string& reason);
  // The request fields a preset's `set` overrode and its `strip` removed.
  void count_preset_enforced(const std::string& preset, int overridden, int stripped);
  // A `request` event in its prefill phase, while someone follows the
  // events (the caller paces them).
  void on_prefill_progress(const PrefillProgress& progress);
  // A download's progress (ModelStore), at most twice a second per model.
  void on_download_progress(const std::string& model, const std::string& file, std::uint64_t bytes,
                            std::uint64_t total);
  void on_download_end(const std::string& model, const Status& result);

  // The whole /metrics text. `kv_usage`: per model, the fraction of its
  // context in use (ContextMonitor), for lemonade:kv_cache_usage_perc.
  std::string render(const RouterView& view, const SlotLimits& limits, const ServerGauges& server,
                     const std::map<std::string, double>& kv_usage) const;

 private:
  EventBus events_;
  LogRing logs_;
  MetricsRegistry registry_;
  Family& requests_;
  Family& request_duration_;
  Family& ttft_;
  Family& prompt_tokens_;
  Family& generated_tokens_;
  Family& tokens_per_second_;
  Family& draft_tokens_;
  Family& draft_accepted_tokens_;
  Family& draft_acceptance_;
  Family& loads_;
  Family& load_duration_;
  Family& evictions_;
  Family& crashes_;
  Family& slot_files_;
  Family& slot_file_bytes_;
  Family& key_requests_;
  Family& key_refusals_;
  Family& preset_enforced_;
  Family& key_prompt_tokens_;
  Family& key_generated_tokens_;
  Family& route_decisions_;
  Family& route_switches_;
  Family& route_classifier_calls_;
  Family& route_classifier_duration_;
  const std::chrono::steady_clock::time_point started_;

  Mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> load_started_ LEMON_GUARDED_BY(mu_);
  std::map<std::string, std::chrono::steady_clock::time_point> progress_sent_ LEMON_GUARDED_BY(mu_);
};

// Resident memory (bytes) and open descriptors of this process, from /proc.
std::int64_t self_rss_bytes();
int self_open_fds();

}  // namespace lemon::telemetry
