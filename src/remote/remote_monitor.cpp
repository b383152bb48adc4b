// RemoteModels' monitor: the endpoints' health checks and discovery
// (remote_models.h).
#include "lemon/core/log.h"
#include "lemon/remote/remote_models.h"

#include <algorithm>

#include "remote_detail.h"

namespace lemon::remote {
namespace {

constexpr std::size_t kMaxProbeBody = 4u << 20;
constexpr std::chrono::milliseconds kProbeTimeout{5000};

Result<net::UpstreamResponse> get(RemoteEndpoint& e, const std::string& tail,
                                  const std::atomic<bool>& stopping) {
  net::UpstreamRequest req;
  req.method = "GET";
  req.path = e.spec().url.path + "/" + tail;
  net::CallOptions options;
  options.connect_timeout = std::min(e.spec().connect_timeout, kProbeTimeout);
  options.total_timeout = kProbeTimeout;
  options.max_response_bytes = kMaxProbeBody;
  options.on_tick = [&stopping] { return !stopping.load(); };  // the router stops
  options.tick_interval = std::chrono::milliseconds(100);
  return e.client().send(req, options);
}

}  // namespace

void RemoteModels::check_endpoint(RemoteEndpoint& e) {
  if (!e.ready()) {
    return;
  }
  const std::string first = e.probe_path.empty() ? "health" : e.probe_path;
  auto reply = get(e, first, stopping_now_);
  if (reply.ok() && reply->status == 404 && first == "health") {
    e.probe_path = "models";  // vLLM, cloud providers: no /health under the base URL
    reply = get(e, "models", stopping_now_);
  }
  if (!reply.ok() && reply.error().code() == ErrorCode::kCancelled) {
    return;  // the router is stopping: no verdict
  }
  std::string why;
  if (!reply.ok()) {
    why = reply.error().message();
  } else if (reply->status < 200 || reply->status >= 300) {
    why = "its health check answered " + std::to_string(reply->status);
  }
  if (!why.empty()) {
    report_failure(e, why);
  } else {
    if (e.probe_path.empty()) {
      e.probe_path = first;
    }
    auto body = nlohmann::json::parse(reply->body, nullptr, false);
    e.is_lemonade = body.is_object() && body.contains("router_version");
    report_success(e);
    if (e.is_lemonade) {
      // Its queue, for least_busy (needs the read scope; without it, ours).
      auto metrics = get(e, "metrics", stopping_now_);
      std::optional<int> queue;
      if (metrics.ok() && metrics->status == 200) {
        auto running = detail::gauge_in(metrics->body, "lemonade:num_requests_running");
        auto waiting = detail::gauge_in(metrics->body, "lemonade:num_requests_waiting");
        if (running || waiting) {
          queue = running.value_or(0) + waiting.value_or(0);
        }
      }
      e.set_remote_queue(queue);
    }
  }
}

void RemoteModels::report_success(RemoteEndpoint& e) const {
  if (e.succeeded()) {
    logger("remote")->info("remote endpoint {} is up", e.spec().base_url);
    endpoint_changed(e);
  }
}

void RemoteModels::report_failure(RemoteEndpoint& e, std::string why) const {
  if (e.failed(std::move(why))) {
    logger("remote")->warn("remote endpoint {} is down: {}", e.spec().base_url,
                           e.health().last_error);
    endpoint_changed(e);
  }
}

void RemoteModels::endpoint_changed(const RemoteEndpoint& e) const {
  const EndpointHealth h = e.health();
  emit("remote_endpoint",
       {{"base_url", e.spec().base_url},
        {"state", endpoint_state_name(h.state)},
        {"error", h.last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(h.last_error)}});
}

void RemoteModels::discover(const DiscoverySpec& source) {
  std::shared_ptr<RemoteEndpoint> endpoint;
  {
    MutexLock lock(mu_);
    endpoint = endpoint_for(source.endpoint);
  }
  if (!endpoint->ready()) {
    return;
  }
  auto reply = get(*endpoint, "models", stopping_now_);
  if (!reply.ok() || reply->status != 200) {
    logger("remote")->warn(
        "remote_discovery {}: cannot list its models ({}); keeping the last list",
        source.endpoint.base_url,
        reply.ok() ? "status " + std::to_string(reply->status) : reply.error().message());
    return;
  }
  auto body = nlohmann::json::parse(reply->body, nullptr, false);
  if (!body.is_object() || !body.contains("data") || !body["data"].is_array()) {
    logger("remote")->warn("remote_discovery {}: its /models is not a model list",
                           source.endpoint.base_url);
    return;
  }
  std::vector<ModelInfo> infos;
  std::vector<RemoteModelSpec> specs;
  for (const auto& m : body["data"]) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) {
      continue;
    }
    if (m.value("recipe", std::string()) == "remote") {
      continue;  // its own remote models: two routers listing each other would never end
    }
    const std::string id = m["id"].get<std::string>();
    RemoteModelSpec spec;
    spec.name = source.prefix + "/" + id;
    spec.checkpoint = id;
    spec.endpoints = {source.endpoint};
    nlohmann::json entry = {{"checkpoint", id},
                            {"endpoints", {{{"base_url", source.endpoint.base_url}}}}};
    if (m.contains("labels") && m["labels"].is_array()) {
      entry["labels"] = m["labels"];
    }
    infos.push_back(detail::catalogue_entry(spec.name, entry));
    specs.push_back(std::move(spec));
  }
  MutexLock lock(mu_);
  if (std::none_of(settings_.discovery.begin(), settings_.discovery.end(),
                   [&source](const DiscoverySpec& d) { return d == source; })) {
    return;  // reconfigured meanwhile
  }
  std::erase_if(models_, [&](const auto& entry) {
    return entry.second->origin == "discovery" && entry.first.starts_with(source.prefix + "/") &&
           std::none_of(specs.begin(), specs.end(),
                        [&entry](const RemoteModelSpec& s) { return s.name == entry.first; });
  });
  for (auto& spec : specs) {
    auto it = models_.find(spec.name);
    if (it == models_.end() || !(it->second->spec == spec)) {
      if (it != models_.end() && it->second->origin != "discovery") {
        continue;  // a declared model of that name wins
      }
      const std::string name = spec.name;  // `spec` moves below
      models_[name] = make_model(std::move(spec), "discovery");
    }
  }
  discovered_[source.prefix] = std::move(infos);
  any_.store(true);
}

void RemoteModels::check_now() {
  MutexLock checking(check_mu_);
  std::vector<DiscoverySpec> sources;
  {
    MutexLock lock(mu_);
    if (HealthClock::now() >= next_discovery_) {
      sources = settings_.discovery;
      next_discovery_ = HealthClock::now() + settings_.discovery_interval;
    }
  }
  for (const auto& source : sources) {
    discover(source);
  }
  // Then every endpoint that is due, those just discovered included.
  std::vector<std::shared_ptr<RemoteEndpoint>> due;
  {
    MutexLock lock(mu_);
    const auto now = HealthClock::now();
    for (const auto& [id, weak] : endpoints_) {
      if (auto e = weak.lock(); e && usable(e->health(), now)) {
        due.push_back(std::move(e));
      }
    }
  }
  for (const auto& e : due) {
    check_endpoint(*e);
  }
}

void RemoteModels::monitor_loop() {
  for (;;) {
    check_now();
    std::chrono::milliseconds interval;
    {
      MutexLock lock(mu_);
      interval = settings_.health_interval;
    }
    MutexLock lock(monitor_mu_);
    if (monitor_cv_.wait_for(lock, interval,
                             [this]() LEMON_REQUIRES(monitor_mu_) { return stopping_; })) {
      return;
    }
  }
}

}  // namespace lemon::remote
