#include "lemon/telemetry/telemetry_hub.h"
#include "lemon/core/mutex.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <set>

#include "lemon/core/clock.h"

namespace lemon::telemetry {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

TelemetryHub::TelemetryHub()
    : requests_(registry_.add("lemonade_requests_total",
                              "Requests to a model, by route and HTTP status", MetricType::kCounter,
                              {"model", "route", "status"})),
      request_duration_(registry_.add(
          "lemonade_request_duration_seconds",
          "End-to-end time of a request to a model, from its arrival to its last byte (waiting "
          "for a load or a free slot included)",
          MetricType::kHistogram, {"model", "route"}, latency_buckets())),
      ttft_(registry_.add("lemonade_time_to_first_token_seconds",
                          "Time to the first generated token (the backend's prompt time, or the "
                          "first streamed event)",
                          MetricType::kHistogram, {"model"}, latency_buckets())),
      prompt_tokens_(registry_.add("lemonade_prompt_tokens_total", "Prompt tokens processed",
                                   MetricType::kCounter, {"model"})),
      generated_tokens_(registry_.add("lemonade_generated_tokens_total", "Tokens generated",
                                      MetricType::kCounter, {"model"})),
      tokens_per_second_(registry_.add("lemonade_tokens_per_second",
                                       "Generation speed of the model's last request",
                                       MetricType::kGauge, {"model"})),
      draft_tokens_(registry_.add("lemonade_draft_tokens_total",
                                  "Tokens a draft model (or the model's own multi-token "
                                  "prediction) proposed, from llama-server's timings",
                                  MetricType::kCounter, {"model"})),
      draft_accepted_tokens_(registry_.add("lemonade_draft_accepted_tokens_total",
                                           "Drafted tokens the model accepted",
                                           MetricType::kCounter, {"model"})),
      draft_acceptance_(registry_.add("lemonade_draft_acceptance_ratio",
                                      "Accepted over drafted tokens in the model's last request "
                                      "that drafted",
                                      MetricType::kGauge, {"model"})),
      loads_(registry_.add("lemonade_model_loads_total", "Loads of a model, by result",
                           MetricType::kCounter, {"model", "result"})),
      load_duration_(registry_.add("lemonade_model_load_duration_seconds",
                                   "Time from a load leaving the queue to its server being ready "
                                   "(evictions and draining included)",
                                   MetricType::kHistogram, {"model"}, load_buckets())),
      evictions_(registry_.add("lemonade_model_evictions_total",
                               "Servers stopped to make room or unloaded, by reason",
                               MetricType::kCounter, {"model", "reason"})),
      crashes_(registry_.add("lemonade_backend_crashes_total",
                             "Backends that exited without being stopped", MetricType::kCounter,
                             {"model"})),
      slot_files_(registry_.add("lemonade_slot_files_total",
                                "llama.cpp slots saved, restored or refused on restore",
                                MetricType::kCounter, {"model", "event"})),
      slot_file_bytes_(registry_.add("lemonade_slot_file_bytes_total",
                                     "Bytes of llama.cpp slots saved and restored",
                                     MetricType::kCounter, {"model", "event"})),
      key_requests_(registry_.add("lemonade_key_requests_total",
                                  "Requests admitted, by API key name and the route's scope",
                                  MetricType::kCounter, {"key", "scope"})),
      key_refusals_(registry_.add("lemonade_key_refusals_total",
                                  "Requests refused, by API key name (\"unknown\" for a missing "
                                  "or wrong key) and reason (key, scope, model, limit)",
                                  MetricType::kCounter, {"key", "reason"})),
      preset_enforced_(registry_.add("lemonade_preset_enforced_fields_total",
                                     "Request fields a preset overrode (set) or removed (strip)",
                                     MetricType::kCounter, {"preset", "action"})),
      key_prompt_tokens_(registry_.add("lemonade_key_prompt_tokens_total",
                                       "Prompt tokens processed, by API key name",
                                       MetricType::kCounter, {"key"})),
      key_generated_tokens_(registry_.add("lemonade_key_generated_tokens_total",
                                          "Tokens generated, by API key name", MetricType::kCounter,
                                          {"key"})),
      route_decisions_(registry_.add("lemonade_routing_decisions_total",
                                     "Requests a routing policy routed, by policy and the rule "
                                     "that chose (\"default\" when none did)",
                                     MetricType::kCounter, {"policy", "rule"})),
      route_switches_(registry_.add("lemonade_routing_switches_total",
                                    "Conversations a routing policy sent to another model than "
                                    "their previous turn's",
                                    MetricType::kCounter, {"policy"})),
      route_classifier_calls_(registry_.add("lemonade_routing_classifier_calls_total",
                                            "Calls of a routing policy's classifiers, by result "
                                            "(ok, failed)",
                                            MetricType::kCounter,
                                            {"policy", "classifier", "result"})),
      route_classifier_duration_(
          registry_.add("lemonade_routing_classifier_duration_seconds",
                        "Time of a routing policy's classifier call, its model's load included",
                        MetricType::kHistogram, {"policy", "classifier"}, latency_buckets())),
      started_(Clock::now()) {}

void TelemetryHub::count_key_request(const std::string& key, const std::string& scope) {
  key_requests_.counter({key, scope}).inc();
}

void TelemetryHub::count_key_refusal(const std::string& key, const std::string& reason) {
  key_refusals_.counter({key, reason}).inc();
}

void TelemetryHub::count_preset_enforced(const std::string& preset, int overridden, int stripped) {
  if (overridden > 0) {
    preset_enforced_.counter({preset, "set"}).inc(overridden);
  }
  if (stripped > 0) {
    preset_enforced_.counter({preset, "strip"}).inc(stripped);
  }
}

void TelemetryHub::on_router_event(const RouterEvent& e) {
  nlohmann::json data = {{"model", e.model}};
  std::string type = router_event_name(e.kind);
  switch (e.kind) {
    case RouterEvent::Kind::kLoadStarted: {
      MutexLock lock(mu_);
      load_started_[e.model] = Clock::now();
      break;
    }
    case RouterEvent::Kind::kLoadSucceeded:
    case RouterEvent::Kind::kLoadFailed: {
      const bool ok = e.kind == RouterEvent::Kind::kLoadSucceeded;
      double took = 0.0;
      {
        MutexLock lock(mu_);
        if (auto it = load_started_.find(e.model); it != load_started_.end()) {
          took = seconds_since(it->second);
          load_started_.erase(it);
        }
      }
      loads_.counter({e.model, ok ? "success" : "failure"}).inc();
      if (ok) {
        load_duration_.histogram({e.model}).observe(took);
        data["backend_url"] = e.detail;
      } else {
        data["message"] = e.detail;
        data["code"] = e.code ? error_code_name(*e.code) : "";
      }
      data["duration_s"] = took;
      break;
    }
    case RouterEvent::Kind::kEvictionPlanned:
      evictions_.counter({e.model, e.detail}).inc();
      data["reason"] = e.detail;
      break;
    case RouterEvent::Kind::kServerStopped:
      // Evictions were counted when planned; unloads and evict-all here.
      if (e.detail == "unload") {
        evictions_.counter({e.model, "unload"}).inc();
      } else if (e.detail == "evict-all after a failed load" ||
                 e.detail == "evict-all after running out of memory") {
        evictions_.counter({e.model, "evict_all"}).inc();
      } else if (e.detail == "memory-pressure") {
        evictions_.counter({e.model, "memory_pressure"}).inc();
      }
      data["reason"] = e.detail;
      data["stop_s"] = e.stop_s;
      data["exit"] = e.exit;
      break;
    case RouterEvent::Kind::kServerCrashed:
      crashes_.counter({e.model}).inc();
      break;
    case RouterEvent::Kind::kDrainWaiting:
      data["in_flight"] = std::atoi(e.detail.c_str());
      break;
    case RouterEvent::Kind::kWaitingForSlot:
      data["waiting"] = std::atoi(e.detail.c_str());
      break;
    case RouterEvent::Kind::kRetryingAfterEvictAll:
      data["message"] = e.detail;
      data["code"] = e.code ? error_code_name(*e.code) : "";
      break;
    case RouterEvent::Kind::kRetryingAfterOutOfMemory:
      data["unloaded"] = e.detail;
      break;
    case RouterEvent::Kind::kReplicaStarted:
      data["replica"] = std::atoi(e.detail.c_str());
      break;
    case RouterEvent::Kind::kReplicaStopped:
      data["reason"] = e.detail;
      break;
    case RouterEvent::Kind::kSlotSaved:
    case RouterEvent::Kind::kSlotRestored:
    case RouterEvent::Kind::kSlotRestoreFailed: {
      const SlotFileEvent& f = e.slot_file;
      slot_files_.counter({e.model, type}).inc();
      if (f.bytes > 0) {
        slot_file_bytes_.counter({e.model, type}).inc(static_cast<double>(f.bytes));
      }
      data["slot"] = f.slot;
      data["seconds"] = f.seconds;
      if (e.kind == RouterEvent::Kind::kSlotRestoreFailed) {
        data["code"] = f.code ? error_code_name(*f.code) : "";
        data["message"] = f.detail;
      } else {
        data["tokens"] = f.tokens;
        data["bytes"] = f.bytes;
      }
      break;
    }
    case RouterEvent::Kind::kBackendReport: {
      // llama-server's load progress and readiness (backend_report.h).
      const BackendReport& b = e.report;
      data["state"] = backend_phase_name(b.phase);
      if (b.progress) {
        data["progress"] = load_progress_json(*b.progress);
      }
      if (b.woke) {
        data["woke"] = true;
      }
      break;
    }
    case RouterEvent::Kind::kLoadQueued:
    case RouterEvent::Kind::kLoadJoined:
      break;
  }
  events_.publish(std::move(type), std::move(data));
}

void TelemetryHub::record_request(const RequestRecord& r) {
  requests_.counter({r.model, r.route, std::to_string(r.status)}).inc();
  request_duration_.histogram({r.model, r.route}).observe(r.duration_s);
  if (r.status < 400) {
    if (r.ttft_s > 0.0) {
      ttft_.histogram({r.model}).observe(r.ttft_s);
    }
    if (r.prompt_tokens > 0) {
      prompt_tokens_.counter({r.model}).inc(r.prompt_tokens);
    }
    if (r.completion_tokens > 0) {
      generated_tokens_.counter({r.model}).inc(r.completion_tokens);
    }
    if (r.tokens_per_second > 0.0) {
      tokens_per_second_.gauge({r.model}).set(r.tokens_per_second);
    }
    if (r.draft_tokens > 0) {
      draft_tokens_.counter({r.model}).inc(r.draft_tokens);
      draft_accepted_tokens_.counter({r.model}).inc(r.draft_accepted_tokens);
      draft_acceptance_.gauge({r.model}).set(static_cast<double>(r.draft_accepted_tokens) /
                                             r.draft_tokens);
    }
    if (!r.key.empty() && r.prompt_tokens > 0) {
      key_prompt_tokens_.counter({r.key}).inc(r.prompt_tokens);
    }
    if (!r.key.empty() && r.completion_tokens > 0) {
      key_generated_tokens_.counter({r.key}).inc(r.completion_tokens);
    }
  }
  if (!events_.wants_request_events()) {
    return;
  }
  nlohmann::json event = {{"model", r.model},
                          {"request_id", r.id},
                          {"phase", "done"},
                          {"route", r.route},
                          {"status", r.status},
                          {"stream", r.stream},
                          {"duration_s", r.duration_s},
                          {"ttft_s", r.ttft_s},
                          {"prompt_tokens", r.prompt_tokens},
                          {"completion_tokens", r.completion_tokens},
                          {"tokens_per_second", r.tokens_per_second},
                          {"draft_tokens", r.draft_tokens},
                          {"draft_accepted_tokens", r.draft_accepted_tokens}};
  if (!r.routed_by.empty()) {
    event["routed_by"] = r.routed_by;
    event["route_rule"] = r.route_rule;
  }
  events_.publish("request", std::move(event));
}

void TelemetryHub::record_route(const RouteRecord& r) {
  route_decisions_.counter({r.policy, r.rule}).inc();
  if (r.switched) {
    route_switches_.counter({r.policy}).inc();
  }
  for (const auto& c : r.classifiers) {
    route_classifier_calls_.counter({r.policy, c.id, c.ok ? "ok" : "failed"}).inc();
    route_classifier_duration_.histogram({r.policy, c.id}).observe(c.seconds);
  }
  if (!events_.wants_request_events()) {
    return;
  }
  nlohmann::json classifiers = nlohmann::json::array();
  for (const auto& c : r.classifiers) {
    classifiers.push_back({{"id", c.id}, {"ok", c.ok}, {"seconds", c.seconds}});
  }
  events_.publish("request", {{"model", r.route_to},
                              {"request_id", r.id},
                              {"phase", "routed"},
                              {"policy", r.policy},
                              {"rule", r.rule},
                              {"switched", r.switched},
                              {"decide_s", r.decide_s},
                              {"classifiers", std::move(classifiers)}});
}

void TelemetryHub::on_prefill_progress(const PrefillProgress& p) {
  if (!events_.wants_request_events()) {
    return;
  }
  events_.publish("request", {{"model", p.model},
                              {"request_id", p.id},
                              {"phase", "prefill"},
                              {"route", p.route},
                              {"prefill_tokens_done", p.tokens_done},
                              {"prefill_tokens_total", p.tokens_total}});
}

void TelemetryHub::on_download_progress(const std::string& model, const std::string& file,
                                        std::uint64_t bytes, std::uint64_t total) {
  {
    MutexLock lock(mu_);
    auto now = Clock::now();
    auto& last = progress_sent_[model];
    if (bytes < total && now - last < std::chrono::milliseconds(500)) {
      return;
    }
    last = now;
  }
  events_.publish("download_progress", {{"model", model},
                                        {"file", file},
                                        {"bytes_downloaded", bytes},
                                        {"bytes_total", total},
                                        {"percent", total > 0 ? static_cast<double>(bytes) * 100.0 /
                                                                    static_cast<double>(total)
                                                              : 0.0}});
}

void TelemetryHub::on_download_end(const std::string& model, const Status& result) {
  {
    MutexLock lock(mu_);
    progress_sent_.erase(model);
  }
  if (result.ok()) {
    events_.publish("download_complete", {{"model", model}});
  } else {
    events_.publish("download_failed", {{"model", model},
                                        {"code", error_code_name(result.error().code())},
                                        {"message", result.error().message()}});
  }
}

std::string TelemetryHub::render(const RouterView& view, const SlotLimits& limits,
                                 const ServerGauges& server,
                                 const std::map<std::string, double>& kv_usage) const {
  std::string out;
  out.reserve(16384);
  PromText text(out);
  registry_.render(text);

  // Per model, from the router's published view (replicas summed).
  struct ModelFigures {
    int in_flight = 0;
    int queued_in_backend = 0;  // sent ahead into a backend's own queue
    int slots = 0;
    int replicas = 0;
    std::int64_t last_use_ms = 0;
    std::int64_t measured_ram = 0;
    DeviceBytes estimate;
  };
  std::map<std::string, ModelFigures> per_model;
  for (const auto& s : view.servers) {
    auto& f = per_model[s.info.model_name];
    f.in_flight += s.in_flight();
    f.queued_in_backend += slot_occupancy(s.in_flight(), s.info.slots).queued_in_backend;
    f.slots += s.info.slots;
    f.replicas += 1;
    f.last_use_ms = std::max(f.last_use_ms, s.last_use_ms());
    f.measured_ram += s.info.measured_ram;
    for (const auto& [device, bytes] : s.info.memory_estimate) {
      f.estimate[device] += bytes;
    }
  }
  text.family("lemonade_requests_in_flight",
              "Requests a model's servers hold now (serving, or queued inside the backend)",
              "gauge");
  for (const auto& [model, f] : per_model) {
    text.sample("lemonade_requests_in_flight", {{"model", model}}, f.in_flight);
  }
  text.family("lemonade_queue_depth",
              "Requests waiting for a model's load or for a free slot of its servers (in the "
              "router's line or inside a backend's queue)",
              "gauge");
  std::map<std::string, int> queue_depth(view.waiting.begin(), view.waiting.end());
  int queued_in_backends = 0;
  for (const auto& [model, f] : per_model) {
    if (f.queued_in_backend > 0) {
      queue_depth[model] += f.queued_in_backend;
      queued_in_backends += f.queued_in_backend;
    }
  }
  for (const auto& [model, n] : queue_depth) {
    text.sample("lemonade_queue_depth", {{"model", model}}, n);
  }
  text.family("lemonade_model_replicas", "Backend processes serving a model", "gauge");
  for (const auto& [model, f] : per_model) {
    text.sample("lemonade_model_replicas", {{"model", model}}, f.replicas);
  }
  // Memory: per model and device, and per device.
  text.family("lemonade_model_memory_estimate_bytes",
              "What a model's servers were estimated to need per device before they started",
              "gauge");
  for (const auto& [model, f] : per_model) {
    for (const auto& [device, bytes] : f.estimate) {
      text.sample("lemonade_model_memory_estimate_bytes", {{"model", model}, {"device", device}},
                  static_cast<double>(bytes));
    }
  }
  text.family("lemonade_model_resident_bytes",
              "Resident memory of a model's server processes, as last measured", "gauge");
  for (const auto& [model, f] : per_model) {
    if (f.measured_ram > 0) {
      text.sample("lemonade_model_resident_bytes", {{"model", model}},
                  static_cast<double>(f.measured_ram));
    }
  }
  const std::pair<const char*, const char*> device_families[] = {
      {"lemonade_device_memory_total_bytes", "A device's memory"},
      {"lemonade_device_memory_available_bytes", "A device's memory free now, as last read"},
      {"lemonade_device_memory_budget_bytes", "What the router's models may hold on a device"},
      {"lemonade_device_memory_used_bytes", "What the router's models hold on a device"}};
  for (std::size_t i = 0; i < std::size(device_families); ++i) {
    text.family(device_families[i].first, device_families[i].second, "gauge");
    for (const auto& d : view.devices) {
      const std::int64_t values[] = {d.total, d.available, d.budget, d.used_by_router};
      text.sample(device_families[i].first, {{"device", d.device}}, static_cast<double>(values[i]));
    }
  }
  text.family("lemonade_model_slots",
              "Requests a model's servers serve at once, all replicas (0: no limit)", "gauge");
  for (const auto& [model, f] : per_model) {
    text.sample("lemonade_model_slots", {{"model", model}}, f.slots);
  }
  text.family("lemonade_model_idle_seconds", "Seconds since a loaded model was last used", "gauge");
  const auto now_ms = unix_ms_now();
  for (const auto& [model, f] : per_model) {
    const double idle =
        f.in_flight > 0
            ? 0.0
            : static_cast<double>(std::max<std::int64_t>(0, now_ms - f.last_use_ms)) / 1000.0;
    text.sample("lemonade_model_idle_seconds", {{"model", model}}, idle);
  }

  // The router.
  text.family("lemonade_loaded_models", "Loaded servers by model type and device", "gauge");
  std::map<std::pair<std::string, std::string>, int> by_type_device;
  for (const auto& s : view.servers) {
    ++by_type_device[{model_type_name(s.info.type), device_name(s.info.device)}];
  }
  for (const auto& [key, n] : by_type_device) {
    text.sample("lemonade_loaded_models", {{"type", key.first}, {"device", key.second}}, n);
  }
  text.family("lemonade_max_loaded_models", "--max-loaded-models per type (-1: no limit)", "gauge");
  for (ModelType t : kAllModelTypes) {
    text.sample("lemonade_max_loaded_models", {{"type", model_type_name(t)}}, limits.limit(t));
  }
  text.family("lemonade_open_connections", "Open client connections", "gauge");
  text.sample("lemonade_open_connections", {}, server.open_connections);
  text.family("lemonade_open_streams", "Streaming responses being written now", "gauge");
  text.sample("lemonade_open_streams", {}, server.open_streams);
  text.family("lemonade_resident_memory_bytes", "Resident memory of the router process", "gauge");
  text.sample("lemonade_resident_memory_bytes", {}, static_cast<double>(self_rss_bytes()));
  text.family("lemonade_open_fds", "Open file descriptors of the router process", "gauge");
  text.sample("lemonade_open_fds", {}, self_open_fds());
  text.family("lemonade_uptime_seconds", "Seconds since the router started", "gauge");
  text.sample("lemonade_uptime_seconds", {}, seconds_since(started_));
  text.family("lemonade_build_info", "The router's version and the Lemonade API it implements",
              "gauge");
  text.sample("lemonade_build_info",
              {{"version", LEMON_ROUTER_VERSION}, {"api_version", LEMON_API_VERSION}}, 1);
  text.family("lemonade_event_followers", "Clients following /api/v1/events", "gauge");
  text.sample("lemonade_event_followers", {}, events_.followers());

  // The model-server protocol of Kubernetes inference gateways
  // (docs/kubernetes.md): queue, running requests, KV-cache use, adapters.
  int running = 0;
  for (const auto& s : view.servers) {
    running += slot_occupancy(s.in_flight(), s.info.slots).busy;
  }
  text.family("lemonade:num_requests_waiting",
              "Requests waiting for a model load or a free slot (all models)", "gauge");
  text.sample("lemonade:num_requests_waiting", {}, view.waiting_total + queued_in_backends);
  text.family("lemonade:num_requests_running", "Requests being served by a backend (all models)",
              "gauge");
  text.sample("lemonade:num_requests_running", {}, running);
  double kv = 0.0;
  for (const auto& [model, used] : kv_usage) {
    kv = std::max(kv, used);
  }
  text.family("lemonade:kv_cache_usage_perc",
              "Fraction (0-1) of the fullest llama.cpp server's context in use, from its /slots",
              "gauge");
  text.sample("lemonade:kv_cache_usage_perc", {}, kv);
  std::string running_models;
  std::set<std::string> running_seen;
  for (const auto& s : view.servers) {
    if (!s.info.draining && running_seen.insert(s.info.model_name).second) {
      running_models += (running_models.empty() ? "" : ",") + s.info.model_name;
    }
  }
  std::string waiting_models;
  std::set<std::string> seen;
  for (const auto& m : view.loading) {
    if (seen.insert(m).second) {
      waiting_models += (waiting_models.empty() ? "" : ",") + m;
    }
  }
  // A gateway counts running + waiting < max_lora as room for another model,
  // so "no limit" must be a large number, never -1 (which reads as full).
  const int llm_limit = limits.limit(ModelType::kLlm);
  constexpr int kNoLimit = std::numeric_limits<std::int32_t>::max();
  // As the protocol asks of its adapter info: the value is when it changed.
  text.family("lemonade:loaded_models_info",
              "Loaded models (running_lora_adapters), models whose load is queued "
              "(waiting_lora_adapters) and the LLM slot limit (max_lora); the value is the Unix "
              "time they last changed",
              "gauge");
  text.sample("lemonade:loaded_models_info",
              {{"running_lora_adapters", running_models},
               {"waiting_lora_adapters", waiting_models},
               {"max_lora", std::to_string(llm_limit >= 0 ? llm_limit : kNoLimit)}},
              static_cast<double>(view.published_ms) / 1000.0);
  return out;
}

std::int64_t self_rss_bytes() {
  std::ifstream in("/proc/self/statm");
  long pages = 0;
  long resident = 0;
  if (!(in >> pages >> resident)) {
    return 0;
  }
  return static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE);
}

int self_open_fds() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') {
        ++n;
      }
    }
    ::closedir(d);
    --n;  // the directory's own descriptor
  }
  return n;
}

}  // namespace lemon::telemetry
