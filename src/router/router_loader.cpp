// Router: the loader thread's half. Loads leave the FIFO queue one at a time;
// for each, the eviction plan is computed from the table as it is *now*
// (seed 000 "Concurrency" 2), victims are drained and stopped with mu_
// released, and the new server is published together with the Leases of
// everyone waiting for it.
#include <algorithm>
#include <future>
#include <map>
#include <thread>

#include "lemon/core/log.h"
#include "lemon/core/mutex.h"
#include "lemon/router/load_scheduler.h"
#include "lemon/router/memory_policy.h"
#include "load_job.h"
#include "router_core.h"

namespace lemon {
namespace {

// Failures that say nothing about the model: the router stopping, a load
// refused because the model is being deleted.
bool counts_towards_cooldown(ErrorCode code) {
  return code != ErrorCode::kShuttingDown && code != ErrorCode::kCancelled &&
         code != ErrorCode::kConflict;
}

}  // namespace

std::shared_ptr<RouterCore::LoadJob> RouterCore::next_job(
    std::chrono::steady_clock::time_point& until) {
  std::vector<QueuedLoad> queue;
  queue.reserve(queue_.size());
  for (const auto& job : queue_) {
    queue.push_back({job->model, job->info.type, job->announced, job->replica,
                     job->explicit_options, job->queued_at});
  }
  const NextLoad next = LoadScheduler::next(
      queue, snapshot(), config_.limits, config_.max_starvation, std::chrono::steady_clock::now());
  until = next.look_again;
  if (!next.index) {
    return nullptr;
  }
  const auto it = queue_.begin() + static_cast<std::ptrdiff_t>(*next.index);
  auto chosen = *it;
  queue_.erase(it);
  return chosen;
}

void RouterCore::loader_loop() {
  MutexLock lock(mu_);
  for (;;) {
    std::shared_ptr<LoadJob> job;
    for (;;) {
      if (shutting_down_) {
        return;
      }
      std::chrono::steady_clock::time_point until;
      job = next_job(until);
      if (job) {
        break;
      }
      if (until == std::chrono::steady_clock::time_point::max()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, until);
      }
    }
    current_job_ = job;
    republish();
    lock.unlock();
    emit({RouterEvent::Kind::kLoadStarted, job->model, {}, {}});
    Status result = run_job(*job);
    if (!result.ok()) {
      emit({RouterEvent::Kind::kLoadFailed, job->model, result.error().message(),
            result.error().code()});
      logger("router")->error("loading '{}' failed: {}", job->model, result.error().message());
    }
    lock.lock();
    if (result.ok()) {
      cooldown_.reset(job->model);
    } else if (counts_towards_cooldown(result.error().code())) {
      auto rest = cooldown_.record_failure(job->model, result.error(), LoadCooldown::Clock::now());
      if (rest.count() > 0) {
        logger("router")->warn(
            "'{}' failed to load {} times in a row; not loading it again for {} s unless "
            "/load asks",
            job->model, cooldown_.consecutive_failures(job->model), rest.count());
        result = Error(result.error()).with_retry_after(static_cast<int>(rest.count()));
      }
    }
    if (!job->done) {
      finish_job(*job, result, nullptr);
    }
    current_job_.reset();
    republish();
  }
}

void RouterCore::finish_job(LoadJob& job, const Status& result,
                            const std::shared_ptr<ServerSlot>& slot) {
  auto group = slot ? groups_.find(job.model) : groups_.end();
  for (const auto& w : job.waiters) {
    if (result.ok() && slot) {
      auto free = group == groups_.end() ? nullptr : group->second.free_for_newcomer();
      if (w->wants_lease && free) {
        ++free->in_flight;  // granted together with publication (Lemonade #1836)
        touch(*free);
        w->granted = free;
      } else if (w->wants_lease && group != groups_.end()) {
        // All slots taken: in the model's line, in arrival order.
        w->ticket = join_line(group->second);
      }
    } else {
      w->error = result.ok() ? Error(ErrorCode::kInternal, "load finished without a server")
                             : result.error();
    }
    w->done = true;
  }
  job.waiters.clear();
  job.done = true;
  cv_.notify_all();
}

std::vector<DeviceReading> RouterCore::read_devices_for(const DeviceBytes& estimate) {
  // A model placed on the CPU needs only system RAM read now (one small
  // file); the GPUs keep the memory poller's last reading, so no load on
  // the CPU ever runs nvidia-smi or reads sysfs (issue #27 §1). A model on a
  // GPU reads every device afresh: its admission depends on it.
  const bool on_gpu = std::any_of(estimate.begin(), estimate.end(),
                                  [](const auto& charge) { return charge.first != kRamDevice; });
  if (on_gpu) {
    return config_.memory->read();
  }
  std::vector<DeviceReading> readings = config_.memory->read_ram();
  MutexLock lock(mu_);
  for (const auto& d : last_readings_) {
    if (d.device != kRamDevice) {
      readings.push_back(d);
    }
  }
  return readings;
}

Result<std::shared_ptr<WrappedServer>> RouterCore::make_server(const LoadJob& job) {
  auto server = factory_.create(job.info, job.options);
  if (!server.ok()) {
    return server;
  }
  if (auto prepared = (*server)->prepare(); !prepared.ok()) {
    return std::move(prepared).error();
  }
  return server;
}

// The loader's effects for one job: LoadScheduler's steps, for real.
class RouterCore::JobEffects final : public LoadEffects {
 public:
  JobEffects(RouterCore& core, LoadJob& job) : core_(core), job_(job) {}

  bool serve_loaded() override {
    MutexLock lock(core_.mu_);
    auto it = core_.groups_.find(job_.model);
    if (it != core_.groups_.end() && it->second.serving() &&
        (!job_.explicit_options ||
         it->second.replicas.front()->server->options() == job_.options)) {
      auto first = it->second.replicas.front();
      core_.touch(*first);
      core_.finish_job(job_, ok_status(), first);
      return true;
    }
    return false;
  }

  Status create_server() override {
    auto server = core_.make_server(job_);
    if (!server.ok()) {
      return std::move(server).error();
    }
    server_ = std::move(server).value();
    return ok_status();
  }

  Status admit_and_start() override {
    // Reading files and devices happens before mu_ is taken.
    job_.estimate = server_->memory_estimate();
    std::vector<DeviceReading> readings;
    if (core_.config_.memory) {
      readings = core_.read_devices_for(job_.estimate);
    }
    std::vector<std::shared_ptr<ServerSlot>> victims;
    std::vector<Eviction> plan;
    bool overlap = false;
    {
      MutexLock lock(core_.mu_);
      LoadTarget target{job_.model, server_->type(), server_->device()};
      plan = plan_eviction(core_.snapshot(), target, core_.config_.limits);
      for (const auto& e : plan) {
        auto replicas = core_.replicas_of(e.model);
        victims.insert(victims.end(), replicas.begin(), replicas.end());
      }
      const std::size_t slot_victims = victims.size();
      if (core_.config_.memory) {
        core_.last_readings_ = readings;
        if (Status fits = core_.admit(job_, readings, victims, true); !fits.ok()) {
          return fits;  // too big even alone: nothing is evicted
        }
        // Victims chosen for the slot limit alone, and the new server fits
        // beside them: they may stop while it starts.
        std::vector<std::shared_ptr<ServerSlot>> none;
        std::vector<VictimView> devices;
        devices.reserve(victims.size());
        for (const auto& v : victims) {
          devices.push_back({v->server->device(), v->in_flight.load()});
        }
        overlap = victims.size() == slot_victims &&
                  may_start_while_victims_stop(server_->device(), devices,
                                               core_.admit(job_, readings, none, false).ok());
      }
      for (std::size_t i = slot_victims; i < victims.size(); ++i) {
        plan.push_back({victims[i]->server->model_name(), EvictionReason::kMemory});
      }
    }
    for (const auto& e : plan) {
      logger("router")->info("evicting '{}' ({}) to load '{}'", e.model,
                             eviction_reason_name(e.reason), job_.model);
      core_.emit(
          {RouterEvent::Kind::kEvictionPlanned, e.model, eviction_reason_name(e.reason), {}});
    }
    if (!overlap) {
      core_.retire(victims, "evicted");
      return core_.start_and_publish(job_, server_);
    }
    // The (idle) victims leave the table now, so no request reaches them;
    // their processes stop on a thread of their own while the new server
    // starts, and the load is complete once both are.
    const Withdrawn withdrawn = core_.withdraw(victims, "evicted", false);
    std::thread stopping([this, &withdrawn] { core_.stop_withdrawn(withdrawn, "evicted"); });
    Status started = core_.start_and_publish(job_, server_);
    stopping.join();
    return started;
  }

  bool evict_idle_for_memory() override {
    const std::string device = primary_device(job_.estimate);
    std::shared_ptr<ServerSlot> victim;
    {
      MutexLock lock(core_.mu_);
      std::vector<ServerMemory> servers;
      std::map<std::string, std::shared_ptr<ServerSlot>> by_id;
      for (const auto& [name, group] : core_.groups_) {
        for (const auto& r : group.replicas) {
          if (name == job_.model || r->state != SlotState::kReady || r->retire_owned) {
            continue;
          }
          const std::string id = std::to_string(r->id);
          servers.push_back({id, charges(*r), r->in_flight.load(), r->lru_tick});
          by_id[id] = r;
        }
      }
      const auto plan = plan_out_of_memory_recovery(servers, device);
      if (plan.empty()) {
        return false;
      }
      victim = by_id.at(plan.front());
    }
    const std::string name = victim->server->model_name();
    logger("router")->warn("'{}' ran out of memory on {}; unloading idle '{}' and retrying",
                           job_.model, device, name);
    core_.emit({RouterEvent::Kind::kEvictionPlanned,
                name,
                eviction_reason_name(EvictionReason::kOutOfMemory),
                {}});
    core_.retire({victim}, "out-of-memory recovery");
    core_.emit(
        {RouterEvent::Kind::kRetryingAfterOutOfMemory, job_.model, name, ErrorCode::kOutOfMemory});
    return true;
  }

  bool evict_all(EvictAllReason reason, const Error& failure) override {
    std::vector<std::shared_ptr<ServerSlot>> everyone;
    {
      MutexLock lock(core_.mu_);
      for (const auto& [name, group] : core_.groups_) {
        everyone.insert(everyone.end(), group.replicas.begin(), group.replicas.end());
      }
    }
    if (reason == EvictAllReason::kAfterOutOfMemory) {
      if (everyone.empty()) {
        return false;
      }
      logger("router")->warn(
          "'{}' still runs out of memory; evicting every model and retrying once", job_.model);
      core_.emit({RouterEvent::Kind::kRetryingAfterEvictAll, job_.model, failure.message(),
                  ErrorCode::kOutOfMemory});
      core_.retire(everyone, "evict-all after running out of memory");
      return true;
    }
    logger("router")->warn("loading '{}' failed ({}); evicting every model and retrying once",
                           job_.model, failure.message());
    core_.emit(
        {RouterEvent::Kind::kRetryingAfterEvictAll, job_.model, failure.message(), failure.code()});
    core_.retire(everyone, "evict-all after a failed load");
    return !everyone.empty();
  }

  Status start_again() override {
    auto retry = core_.make_server(job_);
    if (!retry.ok()) {
      return std::move(retry).error();
    }
    return core_.start_and_publish(job_, *retry);
  }

  Error out_of_memory_everywhere(const Error& last) override {
    const std::string device = primary_device(job_.estimate);
    const auto estimate = job_.estimate.find(device);
    const std::int64_t need = estimate == job_.estimate.end() ? 0 : estimate->second;
    return Error(ErrorCode::kOutOfMemory,
                 "model '" + job_.model + "' ran out of memory on " + device +
                     " while loading, even with every other model unloaded (estimated " +
                     format_bytes(need) + " on " + device + "): " + last.message(),
                 "model")
        .with_detail(last.detail());
  }

  bool shutting_down() const override { return core_.shutting_down_; }

 private:
  RouterCore& core_;
  LoadJob& job_;
  std::shared_ptr<WrappedServer> server_;
};

Status RouterCore::run_job(LoadJob& job) {
  if (job.replica) {
    return run_replica_job(job);
  }
  JobEffects effects(*this, job);
  return LoadScheduler::run(effects);
}

Status RouterCore::start_and_publish(LoadJob& job, const std::shared_ptr<WrappedServer>& server) {
  std::shared_ptr<ServerSlot> slot;
  {
    MutexLock lock(mu_);
    int replica = 0;
    if (job.replica) {
      for (const auto& r : replicas_of(job.model)) {
        replica = std::max(replica, r->replica + 1);
      }
    }
    slot = std::make_shared<ServerSlot>(next_slot_id_++, server, replica, job.estimate);
  }
  std::weak_ptr<ServerSlot> weak = slot;
  server->set_exit_listener([this, weak] { on_server_exit(weak); });
  Status started = server->start([this] { return shutting_down_.load(); });
  if (!started.ok()) {
    if (started.error().code() == ErrorCode::kCancelled && shutting_down_) {
      // Nobody cancelled it but the shutdown: the waiting client is told so
      // (kCancelled would mean it left, and get no answer).
      return Error(ErrorCode::kShuttingDown,
                   "the router is shutting down: the load of '" + job.model + "' was stopped");
    }
    return started;
  }
  {
    MutexLock lock(mu_);
    if (!shutting_down_ && !server->exited() && (!job.replica || groups_.contains(job.model))) {
      slot->state = SlotState::kReady;
      touch(*slot);
      slot->idle_since = std::chrono::steady_clock::now();
      groups_[job.model].replicas.push_back(slot);
      if (!job.replica) {
        last_loaded_ = job.model;
      }
      finish_job(job, ok_status(), slot);
      republish();
      cv_.notify_all();  // a new replica: the model's line may move
    }
  }
  if (!job.done) {
    server->stop();
    if (shutting_down_) {
      return Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down");
    }
    return Error(ErrorCode::kBackendExited,
                 "'" + job.model + "' exited right after it became ready");
  }
  if (job.replica) {
    logger("router")->info("started replica {} of '{}' at {}", slot->replica, job.model,
                           server->base_url());
    emit({RouterEvent::Kind::kReplicaStarted, job.model, std::to_string(slot->replica), {}});
    return ok_status();
  }
  logger("router")->info("loaded '{}' at {}", job.model, server->base_url());
  emit({RouterEvent::Kind::kLoadSucceeded, job.model, server->base_url(), {}});
  return ok_status();
}

Status RouterCore::run_replica_job(LoadJob& job) {
  auto done = [&](const Status& st) {
    MutexLock lock(mu_);
    if (auto g = groups_.find(job.model); g != groups_.end()) {
      g->second.scaling_up = false;
      if (!st.ok()) {
        // Not again right away (no room, or it failed to start).
        g->second.scale_blocked_until = std::chrono::steady_clock::now() + config_.scale_up_after;
      }
    }
    return st;
  };
  {
    MutexLock lock(mu_);
    auto g = groups_.find(job.model);
    if (g == groups_.end() || !g->second.serving()) {
      return done(Error(ErrorCode::kCancelled, "'" + job.model + "' is no longer loaded"));
    }
    job.options = g->second.replicas.front()->server->options();  // the same options
  }
  auto server = make_server(job);
  if (!server.ok()) {
    return done(std::move(server).error());
  }
  job.estimate = (*server)->memory_estimate();
  if (config_.memory) {
    auto readings = read_devices_for(job.estimate);
    Status fits = ok_status();
    {
      MutexLock lock(mu_);
      last_readings_ = readings;
      std::vector<std::shared_ptr<ServerSlot>> none;  // a replica evicts nothing
      fits = admit(job, readings, none, false);
    }
    if (!fits.ok()) {
      logger("router")->info("no replica for '{}': {}", job.model, fits.error().message());
      return done(fits);
    }
  }
  return done(start_and_publish(job, *server));
}

bool RouterCore::retire(const std::vector<std::shared_ptr<ServerSlot>>& victims, const char* reason,
                        bool spare_sessions) {
  Withdrawn withdrawn = withdraw(victims, reason, spare_sessions);
  if (withdrawn.spared) {
    return false;
  }
  stop_withdrawn(withdrawn, reason);
  return true;
}

RouterCore::Withdrawn RouterCore::withdraw(const std::vector<std::shared_ptr<ServerSlot>>& victims,
                                           const char* reason, bool spare_sessions) {
  Withdrawn out;
  MutexLock lock(mu_);
  if (spare_sessions && std::any_of(victims.begin(), victims.end(), [](const auto& v) {
        return v->state == SlotState::kReady && v->pinned > 0;
      })) {
    logger("router")->info("'{}' holds sessions; not stopping it ({})",
                           victims.front()->server->model_name(), reason);
    out.spared = true;
    return out;
  }
  for (const auto& v : victims) {
    if (v->state == SlotState::kGone) {
      continue;
    }
    if (v->retire_owned) {
      out.others.push_back(v);  // someone else is already draining it
      continue;
    }
    v->retire_owned = true;
    v->state = SlotState::kDraining;
    out.owned.push_back(v);
  }
  republish();
  cv_.notify_all();  // requests waiting in a victim's line start over
  auto drained = [&](const ServerSlot& s) {
    return s.in_flight == 0 || s.state == SlotState::kGone || shutting_down_.load();
  };
  for (const auto& v : out.owned) {
    if (!drained(*v)) {
      std::string name = v->server->model_name();
      int busy = v->in_flight;
      lock.unlock();
      logger("router")->info("waiting for '{}' to finish {} request(s) before stopping it", name,
                             busy);
      emit({RouterEvent::Kind::kDrainWaiting, name, std::to_string(busy), {}});
      lock.lock();
      cv_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return drained(*v); });
    }
    remove_replica(v);
  }
  return out;
}

void RouterCore::stop_withdrawn(const Withdrawn& withdrawn, const char* reason) {
  for (const auto& v : withdrawn.owned) {
    const auto signalled = std::chrono::steady_clock::now();
    v->server->stop();
    RouterEvent stopped{RouterEvent::Kind::kServerStopped, v->server->model_name(), reason, {}};
    stopped.stop_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
    stopped.exit = v->server->exit_description();
    logger("router")->info("stopped '{}' ({}; {}, in {:.1f} ms)", stopped.model, reason,
                           stopped.exit.empty() ? "not running" : stopped.exit,
                           stopped.stop_s * 1000.0);
    emit(stopped);
  }
  MutexLock lock(mu_);
  for (const auto& v : withdrawn.owned) {
    v->state = SlotState::kGone;
  }
  cv_.notify_all();
  for (const auto& v : withdrawn.others) {
    cv_.wait(lock, [&]() LEMON_REQUIRES(mu_) {
      return v->state == SlotState::kGone || shutting_down_.load();
    });
  }
}

void RouterCore::on_server_exit(const std::weak_ptr<ServerSlot>& weak) {
  auto slot = weak.lock();
  if (!slot) {
    return;
  }
  {
    MutexLock lock(mu_);
    remove_replica(slot);
    if (!slot->retire_owned) {
      slot->state = SlotState::kGone;
    }
    cv_.notify_all();
  }
  emit({RouterEvent::Kind::kServerCrashed, slot->server->model_name(), {}, {}});
}

void RouterCore::shutdown() {
  // Every caller returns only once shutdown is complete (call_once blocks
  // concurrent callers), so a signal thread and main may both call it.
  std::call_once(shutdown_once_, [this] { shutdown_now(); });
}

void RouterCore::shutdown_now() {
  shutting_down_.store(true);
  std::vector<std::shared_ptr<ServerSlot>> all;
  {
    MutexLock lock(mu_);
    for (auto& job : queue_) {
      finish_job(*job, Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down"),
                 nullptr);
    }
    queue_.clear();
    republish();
    cv_.notify_all();
  }
  housekeeper_cv_.notify_all();
  if (loader_.joinable()) {
    loader_.join();
  }
  if (housekeeper_.joinable()) {
    housekeeper_.join();
  }
  {
    MutexLock lock(mu_);
    for (auto& [name, group] : groups_) {
      for (auto& slot : group.replicas) {
        slot->retire_owned = true;
        all.push_back(slot);
      }
    }
    groups_.clear();
    republish();
    cv_.notify_all();
  }
  // Stop every backend at once, so shutdown takes one grace period, not N.
  std::vector<std::future<void>> stops;
  stops.reserve(all.size());
  for (const auto& slot : all) {
    stops.push_back(std::async(std::launch::async, [slot] { slot->server->stop(); }));
  }
  for (auto& f : stops) {
    f.wait();
  }
  MutexLock lock(mu_);
  for (const auto& slot : all) {
    slot->state = SlotState::kGone;
  }
}

}  // namespace lemon
