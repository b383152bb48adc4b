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
  } else if (reply->status == 401 || reply->status == 403) {
    why = "it refused this router's key (" + std::to_string(reply->status) + ")";
    report_failure(e, why, /*key_refused=*/true);
    return;
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
    report_success(e, Probe::kHealthCheck);
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

void RemoteModels::report_success(RemoteEndpoint& e, Probe by) {
  if (by == Probe::kRequest) {
    e.key_refused.store(false);
  } else if (e.key_refused.load()) {
    return;  // its /health needs no key: only a request tells that it takes ours
  }
  if (e.succeeded()) {
    logger("remote")->info("remote endpoint {} is up", e.spec().base_url);
    endpoint_changed(e);
  }
}

void RemoteModels::report_failure(RemoteEndpoint& e, std::string why, bool key_refused) {
  if (key_refused) {
    e.key_refused.store(true);
  }
  const BreakerPolicy policy{std::chrono::milliseconds(retry_after_ms_.load()),
                             std::chrono::milliseconds(60000)};
  if (e.failed(std::move(why), policy)) {
    logger("remote")->warn("remote endpoint {} is down: {}", e.spec().base_url,
                           e.health().last_error);
    endpoint_changed(e);
    {
      MutexLock lock(monitor_mu_);
      wake_ = true;  // its retry time is sooner than the next round
    }
    monitor_cv_.notify_all();
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
  auto endpoint = endpoint_for(source.endpoint);
  if (!endpoint->ready()) {
    MutexLock lock(mu_);
    if (std::find(settings_.discovery.begin(), settings_.discovery.end(), source) !=
        settings_.discovery.end()) {
      discovered_[source.prefix].source = source;
      discovered_[source.prefix].endpoint = endpoint;  // shown down, with why
    }
    return;
  }
  auto reply = get(*endpoint, "models", stopping_now_);
  nlohmann::json body;
  if (reply.ok() && reply->status == 200) {
    body = nlohmann::json::parse(reply->body, nullptr, false);
  }
  if (!body.is_object() || !body.contains("data") || !body["data"].is_array()) {
    if (!reply.ok() && reply.error().code() == ErrorCode::kCancelled) {
      return;
    }
    logger("remote")->warn(
        "remote_discovery {}: cannot list its models ({}); keeping the last list",
        source.endpoint.base_url,
        !reply.ok()            ? reply.error().message()
        : reply->status != 200 ? "status " + std::to_string(reply->status)
                               : std::string("its /models is not a model list"));
    return;
  }
  std::vector<ModelInfo> infos;
  std::vector<RemoteModelSpec> specs;
  for (const auto& m : body["data"]) {
    if (!m.is_object()) {
      continue;
    }
    auto id = m.find("id");
    if (id == m.end() || !id->is_string() || id->get<std::string>().empty()) {
      continue;
    }
    auto recipe = m.find("recipe");
    if (recipe != m.end() && recipe->is_string() && recipe->get<std::string>() == "remote") {
      continue;  // its own remote models: two routers listing each other would never end
    }
    RemoteModelSpec spec;
    spec.name = source.prefix + "/" + id->get<std::string>();
    spec.checkpoint = id->get<std::string>();
    spec.endpoints = {source.endpoint};
    nlohmann::json entry = {{"checkpoint", spec.checkpoint},
                            {"endpoints", {{{"base_url", source.endpoint.base_url}}}}};
    if (auto labels = m.find("labels"); labels != m.end() && labels->is_array()) {
      entry["labels"] = *labels;
    }
    infos.push_back(detail::catalogue_entry(spec.name, entry, "discovery"));
    specs.push_back(std::move(spec));
  }
  // Models made without the lock; those that did not change are kept.
  std::map<std::string, std::shared_ptr<RemoteModel>> made;
  {
    MutexLock lock(mu_);
    for (const auto& spec : specs) {
      if (auto it = models_.find(spec.name); it != models_.end() && it->second->spec == spec) {
        made[spec.name] = it->second;
      }
    }
  }
  for (auto& spec : specs) {
    if (!made.contains(spec.name)) {
      const std::string name = spec.name;
      made[name] = make_model(std::move(spec), "discovery");
    }
  }
  MutexLock lock(mu_);
  if (std::find(settings_.discovery.begin(), settings_.discovery.end(), source) ==
      settings_.discovery.end()) {
    return;  // reconfigured meanwhile
  }
  std::erase_if(models_, [&](const auto& entry) {
    return entry.second->origin == "discovery" && entry.first.starts_with(source.prefix + "/") &&
           !made.contains(entry.first);
  });
  for (auto& [name, model] : made) {
    auto it = models_.find(name);
    if (it != models_.end() && it->second->origin != "discovery") {
      continue;  // a declared model of that name wins
    }
    models_[name] = std::move(model);
  }
  discovered_[source.prefix] = Discovered{source, endpoint, std::move(infos)};
  any_.store(true);
}

void RemoteModels::check_now() {
  MutexLock checking(check_mu_);
  std::vector<DiscoverySpec> sources;
  {
    MutexLock lock(mu_);
    const auto now = HealthClock::now();
    if (now >= next_discovery_) {
      sources = settings_.discovery;
      next_discovery_ = now + settings_.discovery_interval;
    }
  }
  for (const auto& source : sources) {
    discover(source);
  }
  revalidate_user_models();
  // Then every endpoint that is due: all usable ones each health round, a
  // down one once its retry time has come.
  std::vector<std::shared_ptr<RemoteEndpoint>> due;
  {
    MutexLock lock(mu_);
    const auto now = HealthClock::now();
    const bool round = now >= next_health_;
    if (round) {
      next_health_ = now + settings_.health_interval;
    }
    for (const auto& [id, weak] : endpoints_) {
      auto e = weak.lock();
      if (!e) {
        continue;
      }
      const EndpointHealth h = e->health();
      const bool down = h.state == EndpointState::kDown;
      if ((round && !down) || (down && usable(h, now))) {
        due.push_back(std::move(e));
      }
    }
  }
  for (const auto& e : due) {
    check_endpoint(*e);
  }
}

HealthClock::time_point RemoteModels::next_round() const {
  MutexLock lock(mu_);
  HealthClock::time_point next = std::min(next_health_, next_discovery_);
  for (const auto& [id, weak] : endpoints_) {
    if (auto e = weak.lock()) {
      const EndpointHealth h = e->health();
      if (h.state == EndpointState::kDown && h.retry_at < next) {
        next = h.retry_at;
      }
    }
  }
  return std::max(next, HealthClock::now() + std::chrono::milliseconds(50));
}

void RemoteModels::monitor_loop() {
  for (;;) {
    try {
      check_now();
    } catch (const std::exception& e) {
      // Whatever another machine answered, the router goes on (and does not
      // try again before the next round).
      logger("remote")->error("remote health check failed: {}", e.what());
      MutexLock lock(mu_);
      next_health_ = HealthClock::now() + settings_.health_interval;
    }
    const auto until = next_round();
    MutexLock lock(monitor_mu_);
    monitor_cv_.wait_until(lock, until,
                           [this]() LEMON_REQUIRES(monitor_mu_) { return stopping_ || wake_; });
    if (stopping_) {
      return;
    }
    wake_ = false;
  }
}

}  // namespace lemon::remote
