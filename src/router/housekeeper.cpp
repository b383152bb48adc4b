#include "housekeeper.h"

#include <algorithm>
#include <map>

#include "events.h"
#include "lemon/core/log.h"
#include "lemon/router/memory_policy.h"
#include "lemon/router/pool_policy.h"

namespace lemon {

Housekeeper::Housekeeper(const HousekeeperParts& parts) : parts_(parts) {
  // The devices as they are at start, read before the router serves, so
  // that /health shows them from its first answer; servers are measured
  // only from the first interval on.
  if (parts_.readings.on() && parts_.readings.read_first()) {
    parts_.table.changed();
  }
  thread_ = std::thread([this] { loop(); });
}

Housekeeper::~Housekeeper() {
  join();
}

void Housekeeper::join() {
  parts_.bell.ring();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void Housekeeper::loop() {
  auto next_memory_watch = std::chrono::steady_clock::now() + parts_.config.memory_poll_interval;
  for (;;) {
    const std::uint64_t seen = parts_.bell.rung();
    if (parts_.stopping) {
      return;
    }
    parts_.bell.wait(seen, std::chrono::steady_clock::now() + parts_.config.housekeeping_interval);
    if (parts_.stopping) {
      return;
    }
    if (parts_.readings.on() && std::chrono::steady_clock::now() >= next_memory_watch) {
      next_memory_watch = std::chrono::steady_clock::now() + parts_.config.memory_poll_interval;
      watch_memory();
      if (parts_.stopping) {
        return;
      }
    }
    if (parts_.defaults.any_absent()) {
      load_defaults();
      if (parts_.stopping) {
        return;
      }
    }
    check_options();
    reload_stale();
    if (parts_.stopping) {
      return;
    }
    tend_pool();
  }
}

void Housekeeper::watch_memory() {
  const auto slots = parts_.table.snapshot().all_slots();
  // GPU memory per process, from the device's own tool (nvidia-smi), when
  // some server is charged to a GPU.
  const bool on_gpu = std::any_of(slots.begin(), slots.end(), [](const auto& s) {
    return std::any_of(s->estimate.begin(), s->estimate.end(), [](const auto& device) {
      return device.first != kRamDevice && device.second > 0;
    });
  });
  const auto gpu_by_pid = parts_.config.footprints != nullptr && on_gpu
                              ? parts_.readings.process_memory()
                              : std::map<int, DeviceBytes>{};
  for (const auto& s : slots) {
    const std::int64_t rss = s->server->measured_rss();
    s->measured_ram.store(rss, std::memory_order_relaxed);
    // Its first measurement once loaded (settled), then each after its
    // requests: the store keeps the configuration's peak.
    if (rss > 0 && parts_.config.footprints != nullptr) {
      DeviceBytes measured{{kRamDevice, rss}};
      if (const auto pid = s->server->pid()) {
        if (auto gpu = gpu_by_pid.find(*pid); gpu != gpu_by_pid.end()) {
          measured.insert(gpu->second.begin(), gpu->second.end());
        }
      }
      parts_.config.footprints->remember(footprint_key(*s->server, s->estimate), measured);
    }
  }
  const auto readings = parts_.readings.read_all();
  const TableSnapshot table = parts_.table.snapshot();
  const std::int64_t margin = parts_.settings.now()->values.memory_margin;
  std::vector<ServerMemory> views;
  std::map<std::string, std::shared_ptr<ServerSlot>> by_id;
  for (const auto& g : table.groups) {
    for (const auto& r : g.replicas) {
      if (!r.ready) {
        continue;
      }
      const std::string id = std::to_string(r.slot->id);
      views.push_back({id, r.charges, r.in_flight, r.lru_tick, g.pinned});
      by_id[id] = r.slot;
    }
  }
  std::vector<std::shared_ptr<ServerSlot>> victims;
  for (const auto& id : plan_pressure_relief(views, readings, margin)) {
    victims.push_back(by_id.at(id));
  }
  parts_.table.changed();  // the measured figures and the devices
  for (const auto& v : victims) {
    logger("router")->warn(
        "'{}': less than {} free on a device it uses (another program took memory); "
        "unloading it",
        v->server->model_name(), format_bytes(margin));
    parts_.retirer.retire({v}, "memory-pressure");
  }
  for (const auto& d : readings) {
    if (d.device != "ram" && d.total > 0) {
      relieve_pressure(1.0 - static_cast<double>(d.available) / static_cast<double>(d.total));
    }
  }
}

std::vector<std::string> Housekeeper::relieve_pressure(double used_fraction) {
  const auto settings = parts_.settings.now();
  if (!settings->values.auto_evict || used_fraction < settings->values.auto_evict_threshold) {
    return {};
  }
  const TableSnapshot table = parts_.table.snapshot();
  const std::string victim = choose_pressure_victim(table.slot_views());
  const GroupState* group = table.find(victim);
  if (victim.empty() || group == nullptr) {
    return {};
  }
  logger("router")->warn(
      "'{}': a GPU is {:.0f}% full (--auto-evict-threshold-pct {:.0f}%); unloading it", victim,
      used_fraction * 100, settings->values.auto_evict_threshold * 100);
  parts_.retirer.retire(group->slots(), "memory-pressure");
  return {victim};
}

void Housekeeper::load_defaults() {
  const auto settings = parts_.settings.now();
  const auto due =
      parts_.defaults.due(parts_.table.snapshot(), std::chrono::steady_clock::now(),
                          settings->values.default_model_delay, parts_.queue.pending());
  for (const auto& name : due) {
    auto made = make_load_job(parts_.models, *parts_.settings.now(), name, std::nullopt);
    if (!made.ok()) {
      logger("router")->warn("default model '{}' cannot load: {}", name, made.error().message());
      parts_.defaults.forget(name);
      continue;
    }
    logger("router")->info("loading default model '{}'", name);
    if (parts_.stopping) {
      return;
    }
    (*made)->default_load = true;
    if (!parts_.queue.enqueue(*made, "default model")) {
      if (parts_.stopping) {
        return;
      }
      parts_.defaults.forget(name);  // being deleted: nothing to bring back
    }
  }
}

void Housekeeper::check_options() {
  const auto settings = parts_.settings.now();
  const TableSnapshot table = parts_.table.snapshot();
  // Forget servers no longer first in their model.
  std::set<std::uint64_t> firsts;
  for (const auto& g : table.groups) {
    firsts.insert(g.replicas.front().slot->id);
  }
  std::erase_if(current_for_, [&](const auto& e) { return !firsts.contains(e.first); });
  std::erase_if(stale_, [&](std::uint64_t id) { return !firsts.contains(id); });
  // Models published with an older CLI layer: what a load would give each
  // now, against what it has (make_load_job reads the catalogue).
  for (const auto& g : table.groups) {
    const ServerSlot& first = *g.replicas.front().slot;
    auto checked = current_for_.find(first.id);
    const std::uint64_t generation =
        std::max(first.cli_generation, checked == current_for_.end() ? 0 : checked->second);
    if (stale_.contains(first.id) || generation >= settings->cli_generation) {
      continue;
    }
    auto job = make_load_job(parts_.models, *settings, g.model, first.request_options);
    if (!job.ok()) {
      continue;  // not loadable now: looked at again next time
    }
    if ((*job)->options == first.server->options()) {
      current_for_[first.id] = (*job)->cli_generation;  // the change leaves it as it is
    } else {
      stale_.insert(first.id);
      logger("router")->info("'{}': its load options changed; reloading it once it is idle",
                             g.model);
    }
  }
}

void Housekeeper::reload_stale() {
  if (stale_.empty()) {
    return;
  }
  // A stale model, its first server's id, and whether it is idle with no
  // load of it queued now.
  auto views_now = [this](const TableSnapshot& table) {
    std::vector<std::pair<OptionReloadView, std::uint64_t>> views;
    for (const auto& g : table.groups) {
      const std::uint64_t id = g.replicas.front().slot->id;
      if (stale_.contains(id)) {
        views.push_back(
            {{g.model, true, g.in_flight(), g.waiting, parts_.queue.queued_or_blocked(g.model)},
             id});
      }
    }
    return views;
  };
  const auto before = views_now(parts_.table.snapshot());
  std::vector<OptionReloadView> plain;
  plain.reserve(before.size());
  for (const auto& [view, id] : before) {
    plain.push_back(view);
  }
  for (const auto& name : reload_when_idle(plain)) {
    const auto it = std::find_if(before.begin(), before.end(),
                                 [&](const auto& v) { return v.first.model == name; });
    const std::uint64_t id = it->second;
    const TableSnapshot table = parts_.table.snapshot();
    const GroupState* g = table.find(name);
    if (g == nullptr || g->replicas.front().slot->id != id) {
      continue;
    }
    auto made = make_load_job(parts_.models, *parts_.settings.now(), name,
                              g->replicas.front().slot->request_options);
    if (parts_.stopping) {
      return;
    }
    if (!made.ok()) {
      logger("router")->warn("'{}' cannot be reloaded with its new options: {}", name,
                             made.error().message());
      stale_.erase(id);  // not tried again until the next change
      continue;
    }
    // Still there, still idle, still stale, nothing queued for it: what
    // changed meanwhile decides.
    const TableSnapshot now = parts_.table.snapshot();
    const auto still = views_now(now);
    const bool idle = std::any_of(still.begin(), still.end(), [&](const auto& v) {
      return v.first.model == name && v.second == id && v.first.in_flight == 0 &&
             v.first.waiting == 0 && !v.first.load_queued;
    });
    const GroupState* current = now.find(name);
    if (!idle || current == nullptr) {
      continue;
    }
    std::shared_ptr<LoadJob> job = *made;
    job->explicit_options = true;  // a reload, not a join of the loaded server
    job->options_reload = true;
    job->pinned = current->pinned;  // it keeps its standing as it is now
    job->pin_given = true;
    job->priority = current->priority;
    job->priority_given = true;
    stale_.erase(id);
    parts_.queue.enqueue(job, "load options changed");
  }
}

void Housekeeper::tend_pool() {
  const TableSnapshot table = parts_.table.snapshot();
  const auto settings = parts_.settings.now();
  const auto now = std::chrono::steady_clock::now();
  std::vector<ModelPoolView> views;
  views.reserve(table.groups.size());
  {
    MutexLock lock(mu_);
    std::erase_if(scale_ups_, [&](const auto& e) { return table.find(e.first) == nullptr; });
    for (const auto& g : table.groups) {
      ModelPoolView v = pool_view(g, parts_.config.max_replicas);
      if (auto s = scale_ups_.find(g.model); s != scale_ups_.end()) {
        v.scaling_up = s->second.running || now < s->second.blocked_until;
      }
      views.push_back(std::move(v));
    }
  }
  const PoolPlan plan = plan_pool(views, now, settings->pool_policy());
  for (const auto& model : plan.scale_up) {
    const GroupState* g = table.find(model);
    auto job = std::make_shared<LoadJob>();
    job->model = model;
    job->info = g->first().model();
    job->options = g->first().options();
    job->replica = true;
    job->priority = g->priority;
    job->on_finish = [this, model](const Status& result) { replica_finished(model, result); };
    {
      MutexLock lock(mu_);
      scale_ups_[model].running = true;
    }
    if (!parts_.queue.enqueue(job, "")) {
      return;  // shutting down
    }
    logger("router")->info("'{}': {} request(s) waited {} ms for a free slot; starting a replica",
                           model, g->waiting, settings->values.scale_up_after.count());
  }
  std::vector<std::shared_ptr<ServerSlot>> scale_down;
  std::vector<const GroupState*> expired;
  for (const auto& g : table.groups) {
    for (const auto& r : g.replicas) {
      if (std::find(plan.scale_down.begin(), plan.scale_down.end(), r.slot->id) !=
          plan.scale_down.end()) {
        scale_down.push_back(r.slot);
      }
    }
    if (std::find(plan.expired.begin(), plan.expired.end(), g.model) != plan.expired.end()) {
      expired.push_back(&g);
    }
  }
  const RetireRule spare{true, StopCause::kPlanned, {}};
  for (const auto& r : scale_down) {
    const std::string model = r->server->model_name();
    logger("router")->info("'{}': replica {} idle for {} ms; stopping it", model, r->replica,
                           settings->values.scale_down_after.count());
    // A session pinned since the snapshot keeps it (checked under the
    // table's lock).
    if (parts_.retirer.retire({r}, "scale-down", spare)) {
      emit_event(parts_.config, {RouterEvent::Kind::kReplicaStopped, model, "scale-down", {}});
    }
  }
  for (const GroupState* g : expired) {
    logger("router")->info("'{}' was idle for its keep-alive; unloading it", g->model);
    parts_.retirer.retire(g->slots(), "keep-alive", spare);
  }
}

void Housekeeper::replica_finished(const std::string& model, const Status& result) {
  const auto retry_after = parts_.settings.now()->values.scale_up_after;
  MutexLock lock(mu_);
  auto it = scale_ups_.find(model);
  if (it == scale_ups_.end()) {
    return;
  }
  it->second.running = false;
  if (!result.ok()) {
    // Not again right away (no room, or it failed to start).
    it->second.blocked_until = std::chrono::steady_clock::now() + retry_after;
  }
}

}  // namespace lemon
