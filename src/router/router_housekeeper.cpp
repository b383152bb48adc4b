// Router: the housekeeper thread (issue #13 §2-3). It wakes every
// housekeeping_interval (or when a request with keep_alive 0 ends), takes a
// snapshot under mu_, asks plan_pool() what to do, and acts with mu_
// released: scale-ups become replica jobs for the loader, scale-downs and
// expired keep-alives go through retire(), like any eviction, except that
// retire() spares them when a session was pinned meanwhile (a replica with
// sessions is never stopped by the pool's idle timers).
#include "lemon/core/log.h"
#include "lemon/core/mutex.h"
#include "lemon/router/memory_policy.h"
#include "lemon/router/pool_policy.h"
#include "load_job.h"
#include "router_core.h"

namespace lemon {

struct RouterCore::HousekeepingWork {
  std::vector<std::shared_ptr<ServerSlot>> scale_down;
  std::vector<std::pair<std::string, std::vector<std::shared_ptr<ServerSlot>>>> expired;
};

ModelPoolView RouterCore::pool_view(const std::string& name, const ModelGroup& group,
                                    std::chrono::steady_clock::time_point now) const {
  ModelPoolView v;
  v.model = name;
  v.waiting = static_cast<int>(group.line.size());
  v.waiting_since = group.waiting_since;
  v.scaling_up = group.scaling_up || now < group.scale_blocked_until;
  v.keep_alive = group.keep_alive;
  v.pinned = group.pinned;
  v.max_replicas =
      group.replicas.front()->server->options().int_value("max_replicas", config_.max_replicas);
  for (const auto& r : group.replicas) {
    // r->pinned: its sessions, a counter on the slot that
    // pin_backend_slot() keeps under mu_ (nothing here calls the session
    // table, which calls the router under its own lock).
    v.replicas.push_back(
        {r->id, r->replica, r->in_flight, r->state == SlotState::kReady, r->idle_since, r->pinned});
  }
  return v;
}

PoolPolicy RouterCore::pool_policy() const {
  return PoolPolicy{live_.scale_up_after, live_.scale_down_after, live_.keep_alive};
}

RouterCore::HousekeepingWork RouterCore::plan_housekeeping(
    std::chrono::steady_clock::time_point now) {
  std::vector<ModelPoolView> views;
  views.reserve(groups_.size());
  for (const auto& [name, group] : groups_) {
    views.push_back(pool_view(name, group, now));
  }
  PoolPlan plan = plan_pool(views, now, pool_policy());

  HousekeepingWork work;
  for (const auto& model : plan.scale_up) {
    auto& group = groups_.at(model);
    auto job = std::make_shared<LoadJob>();
    job->model = model;
    job->info = group.replicas.front()->server->model();
    job->options = group.replicas.front()->server->options();
    job->replica = true;
    job->priority = group.priority;
    job->announced = true;  // no queued event for a scale-up
    group.scaling_up = true;
    queue_.push_back(job);
    logger("router")->info("'{}': {} request(s) waited {} ms for a free slot; starting a replica",
                           model, group.line.size(), live_.scale_up_after.count());
  }
  if (!plan.scale_up.empty()) {
    republish();
    cv_.notify_all();
  }
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      if (std::find(plan.scale_down.begin(), plan.scale_down.end(), r->id) !=
          plan.scale_down.end()) {
        work.scale_down.push_back(r);
      }
    }
    if (std::find(plan.expired.begin(), plan.expired.end(), name) != plan.expired.end()) {
      work.expired.emplace_back(name, group.replicas);
    }
  }
  return work;
}

void RouterCore::watch_memory() {
  std::vector<std::shared_ptr<ServerSlot>> servers;
  {
    MutexLock lock(mu_);
    for (const auto& [name, group] : groups_) {
      servers.insert(servers.end(), group.replicas.begin(), group.replicas.end());
    }
  }
  for (const auto& s : servers) {
    s->measured_ram.store(s->server->measured_rss(), std::memory_order_relaxed);
  }
  config_.memory->rescan_tools();
  auto readings = config_.memory->read();
  std::vector<std::shared_ptr<ServerSlot>> victims;
  std::int64_t margin = 0;
  {
    MutexLock lock(mu_);
    last_readings_ = readings;
    std::vector<ServerMemory> views;
    std::map<std::string, std::shared_ptr<ServerSlot>> by_id;
    for (const auto& [name, group] : groups_) {
      for (const auto& r : group.replicas) {
        if (r->state != SlotState::kReady) {
          continue;
        }
        const std::string id = std::to_string(r->id);
        views.push_back({id, charges(*r), r->in_flight.load(), r->lru_tick, group.pinned});
        by_id[id] = r;
      }
    }
    margin = live_.memory_margin;
    for (const auto& id : plan_pressure_relief(views, readings, margin)) {
      victims.push_back(by_id.at(id));
    }
    republish();  // the measured figures and the devices
  }
  for (const auto& v : victims) {
    logger("router")->warn(
        "'{}': less than {} free on a device it uses (another program took memory); "
        "unloading it",
        v->server->model_name(), format_bytes(margin));
    retire({v}, "memory-pressure");
  }
}

void RouterCore::note_displaced(const std::vector<std::shared_ptr<ServerSlot>>& victims,
                                const std::string& displacer) {
  const auto& defaults = config_.default_models;
  auto is_default = [&](const std::string& model) {
    return std::find(defaults.begin(), defaults.end(), model) != defaults.end();
  };
  if (is_default(displacer)) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  std::map<std::string, std::size_t> leaving;  // a default's replicas this stop takes
  for (const auto& v : victims) {
    if (!v->retire_owned && is_default(v->server->model_name())) {
      ++leaving[v->server->model_name()];
    }
  }
  for (const auto& [model, count] : leaving) {
    auto g = groups_.find(model);
    if (model == displacer || g == groups_.end() || g->second.replicas.size() != count) {
      continue;  // a reload, or only some replicas go: it stays loaded
    }
    absent_defaults_[model] =
        AbsentDefault{model, g->second.replicas.front()->server->type(), now, displacer, false};
  }
}

void RouterCore::load_defaults() {
  // mu_ is released around what may touch the disk (the catalogue) and
  // what calls out (events), as wait_step() does.
  const auto now = std::chrono::steady_clock::now();
  std::vector<AbsentDefault> absent;
  for (const auto& [name, d] : absent_defaults_) {
    if (!groups_.contains(name)) {
      absent.push_back(d);
    }
  }
  std::vector<ServerActivity> servers;
  for (const auto& [name, group] : groups_) {
    const int waiting = static_cast<int>(group.line.size());
    for (const auto& r : group.replicas) {
      servers.push_back({name, r->server->type(), r->in_flight + waiting, r->idle_since});
    }
  }
  const bool loads_pending = !queue_.empty() || (current_job_ && !current_job_->done);
  for (const auto& name :
       defaults_to_load(absent, servers, now, live_.default_model_delay, loads_pending)) {
    absent_defaults_[name].loading = true;
    mu_.unlock();
    auto made = make_job(name, std::nullopt);
    if (!made.ok()) {
      logger("router")->warn("default model '{}' cannot load: {}", name, made.error().message());
      mu_.lock();
      absent_defaults_.erase(name);
      continue;
    }
    logger("router")->info("loading default model '{}'", name);
    std::shared_ptr<LoadJob> job = *made;
    mu_.lock();
    if (shutting_down_) {
      return;
    }
    if (blocked_.contains(name)) {
      absent_defaults_.erase(name);  // being deleted: nothing to bring back
      continue;
    }
    job->default_load = true;
    queue_.push_back(job);
    republish();
    cv_.notify_all();
    mu_.unlock();
    emit({RouterEvent::Kind::kLoadQueued, job->model, "default model", {}});
    mu_.lock();
    announce(*job);
  }
}

void RouterCore::reload_changed_options() {
  // Models published with an older CLI layer: what a load would give each
  // now, against what it has (make_job reads the catalogue: no lock).
  struct Behind {
    std::string model;
    std::optional<RecipeOptions> request_options;
    RecipeOptions options;
    std::uint64_t generation;
  };
  std::vector<Behind> behind;
  for (const auto& [name, group] : groups_) {
    if (!group.replicas.empty() && !group.options_stale && group.cli_generation < cli_generation_) {
      behind.push_back({name, group.request_options, group.replicas.front()->server->options(),
                        group.cli_generation});
    }
  }
  if (!behind.empty()) {
    std::vector<std::pair<std::string, std::shared_ptr<LoadJob>>> made;
    mu_.unlock();
    for (const auto& m : behind) {
      auto job = make_job(m.model, m.request_options);
      made.emplace_back(m.model, job.ok() ? *job : nullptr);
    }
    mu_.lock();
    for (std::size_t i = 0; i < behind.size(); ++i) {
      auto g = groups_.find(behind[i].model);
      const auto& job = made[i].second;
      if (g == groups_.end() || g->second.replicas.empty() || job == nullptr ||
          g->second.cli_generation != behind[i].generation) {
        continue;  // gone, not loadable, or published again meanwhile
      }
      if (job->options == g->second.replicas.front()->server->options()) {
        g->second.cli_generation = job->cli_generation;  // the change leaves it as it is
      } else {
        g->second.options_stale = true;
        logger("router")->info("'{}': its load options changed; reloading it once it is idle",
                               behind[i].model);
      }
    }
  }
  auto views_now = [this]() LEMON_REQUIRES(mu_) {
    std::vector<OptionReloadView> views;
    for (const auto& [name, group] : groups_) {
      if (group.options_stale) {
        views.push_back({name, true, group.in_flight(), static_cast<int>(group.line.size()),
                         find_job(name, std::nullopt) != nullptr || blocked_.contains(name)});
      }
    }
    return views;
  };
  for (const auto& name : reload_when_idle(views_now())) {
    auto g = groups_.find(name);
    if (g == groups_.end()) {
      continue;
    }
    const std::optional<RecipeOptions> request_options = g->second.request_options;
    mu_.unlock();
    auto made = make_job(name, request_options);
    mu_.lock();
    if (shutting_down_) {
      return;
    }
    if (!made.ok()) {
      logger("router")->warn("'{}' cannot be reloaded with its new options: {}", name,
                             made.error().message());
      if (auto again = groups_.find(name); again != groups_.end()) {
        again->second.options_stale = false;  // not tried again until the next change
      }
      continue;
    }
    // Still there, still idle, still stale, nothing queued for it: what
    // changed while the lock was released decides.
    const auto now_views = views_now();
    const bool still = std::any_of(now_views.begin(), now_views.end(), [&](const auto& v) {
      return v.model == name && v.in_flight == 0 && v.waiting == 0 && !v.load_queued;
    });
    g = groups_.find(name);
    if (!still || g == groups_.end()) {
      continue;
    }
    std::shared_ptr<LoadJob> job = *made;
    job->explicit_options = true;  // a reload, not a join of the loaded server
    job->options_reload = true;
    job->pinned = g->second.pinned;  // it keeps its standing as it is now
    job->pin_given = true;
    job->priority = g->second.priority;
    job->priority_given = true;
    g->second.options_stale = false;
    queue_.push_back(job);
    republish();
    cv_.notify_all();
    mu_.unlock();
    emit({RouterEvent::Kind::kLoadQueued, job->model, "load options changed", {}});
    mu_.lock();
    announce(*job);
  }
}

void RouterCore::housekeeper_loop() {
  if (config_.memory) {
    // The devices as they are at start, for /health; servers are measured
    // only from the first interval on.
    auto readings = config_.memory->read();
    MutexLock lock(mu_);
    if (last_readings_.empty()) {
      last_readings_ = std::move(readings);
      republish();
    }
  }
  MutexLock lock(mu_);
  auto next_memory_watch = std::chrono::steady_clock::now() + config_.memory_poll_interval;
  while (!shutting_down_) {
    housekeeper_cv_.wait_for(lock, config_.housekeeping_interval);
    if (shutting_down_) {
      break;
    }
    if (config_.memory && std::chrono::steady_clock::now() >= next_memory_watch) {
      next_memory_watch = std::chrono::steady_clock::now() + config_.memory_poll_interval;
      lock.unlock();
      watch_memory();
      lock.lock();
      if (shutting_down_) {
        break;
      }
    }
    if (!absent_defaults_.empty()) {
      load_defaults();
      if (shutting_down_) {
        break;
      }
    }
    reload_changed_options();
    if (shutting_down_) {
      break;
    }
    HousekeepingWork work = plan_housekeeping(std::chrono::steady_clock::now());
    if (work.scale_down.empty() && work.expired.empty()) {
      continue;
    }
    const auto scale_down_after = live_.scale_down_after;
    lock.unlock();
    for (const auto& r : work.scale_down) {
      const std::string model = r->server->model_name();
      logger("router")->info("'{}': replica {} idle for {} ms; stopping it", model, r->replica,
                             scale_down_after.count());
      // A session pinned since the snapshot keeps it (checked under mu_).
      if (retire({r}, "scale-down", /*spare_sessions=*/true)) {
        emit({RouterEvent::Kind::kReplicaStopped, model, "scale-down", {}});
      }
    }
    for (const auto& [model, replicas] : work.expired) {
      logger("router")->info("'{}' was idle for its keep-alive; unloading it", model);
      retire(replicas, "keep-alive", /*spare_sessions=*/true);
    }
    lock.lock();
  }
}

}  // namespace lemon
