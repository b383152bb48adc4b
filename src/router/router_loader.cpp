// Router: the loader thread's half. Loads leave the FIFO queue one at a time;
// for each, the eviction plan is computed from the table as it is *now*
// (seed 000 "Concurrency" 2), victims are drained and stopped with mu_
// released, and the new server is published together with the Leases of
// everyone waiting for it.
#include <algorithm>
#include <future>
#include <map>
#include <thread>

#include "lemon/core/error.h"
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
         code != ErrorCode::kConflict && code != ErrorCode::kSlotsPinned;
}

}  // namespace

std::shared_ptr<RouterCore::LoadJob> RouterCore::next_job(
    std::chrono::steady_clock::time_point& until) {
  std::vector<QueuedLoad> queue;
  queue.reserve(queue_.size());
  for (const auto& job : queue_) {
    queue.push_back({job->model, job->info.type, job->announced, job->replica,
                     job->explicit_options, job->queued_at, job->priority});
  }
  const NextLoad next = LoadScheduler::next(queue, snapshot(), live_.limits, live_.max_starvation,
                                            std::chrono::steady_clock::now());
  until = next.look_again;
  std::shared_ptr<LoadJob> chosen;
  if (next.index) {
    chosen = queue_[*next.index];
  }
  // A load that waits for a higher priority to leave, and that nobody waits
  // for any more, is dropped: it would evict for no one.
  std::vector<std::shared_ptr<LoadJob>> abandoned;
  for (const std::size_t i : next.outranked) {
    auto& job = queue_[i];
    const bool reload_gone =
        job->options_reload && (!groups_.contains(job->model) || blocked_.contains(job->model));
    if (reload_gone || (job->waiters.empty() && !job->default_load && !job->options_reload)) {
      abandoned.push_back(job);
    } else if (!job->outranked_logged) {
      job->outranked_logged = true;
      logger("router")->info(
          "'{}' (priority {}) waits in the queue: only a model of a higher priority could make "
          "room for it, and a load never evicts one",
          job->model, job->priority);
    }
  }
  if (chosen && chosen->options_reload &&
      (!groups_.contains(chosen->model) || blocked_.contains(chosen->model))) {
    abandoned.push_back(chosen);  // its model went meanwhile: nothing to reload
    chosen = nullptr;
    until = std::chrono::steady_clock::now();  // the rest of the queue, at once
  }
  if (chosen || !abandoned.empty()) {
    std::erase_if(queue_, [&](const std::shared_ptr<LoadJob>& job) {
      return job == chosen || std::find(abandoned.begin(), abandoned.end(), job) != abandoned.end();
    });
    for (const auto& job : abandoned) {
      job->done = true;
      logger("router")->info("'{}': nobody waits for its load any more; dropped from the queue",
                             job->model);
    }
    if (!abandoned.empty()) {
      republish();
    }
  }
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
    if (!result.ok() && !job->evicted_all && cooldown_.failed_after_evict_all(job->model) &&
        is_retryable_load_failure(result.error().code())) {
      logger("router")->warn(
          "'{}' failed again; no model was evicted for it, as its last load failed with every "
          "other model evicted (POST /api/v1/load tries that again)",
          job->model);
    }
    if (result.ok()) {
      cooldown_.reset(job->model);
    } else if (counts_towards_cooldown(result.error().code())) {
      auto rest = cooldown_.record_failure(job->model, result.error(), LoadCooldown::Clock::now(),
                                           job->evicted_all);
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
        if (free->pinned > 0 || free->restoring) {
          // As grant() does: a free slot no session holds and none restores.
          w->granted_slot = free->slot_for_request();
          if (w->granted_slot >= 0) {
            free->busy_slots[static_cast<std::size_t>(w->granted_slot)] = true;
          }
        }
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
  if (!result.ok() && job.default_load) {
    if (auto d = absent_defaults_.find(job.model); d != absent_defaults_.end()) {
      logger("router")->warn("default model '{}' did not load ({}); it is not tried again",
                             job.model, result.error().message());
      absent_defaults_.erase(d);
    }
  }
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
    const bool one_replica = server->options().int_value("max_replicas", config_.max_replicas) <= 1;
    slot =
        std::make_shared<ServerSlot>(next_slot_id_++, server, replica, job.estimate, one_replica);
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
  // Its saved slots (issue #29 §1) are restored after it is published,
  // off the lock: until then the router holds those slots (leases no other
  // request can have), so a request for any other slot starts at once and
  // one for a restoring slot (its session) waits for it.
  std::vector<int> saved;
  if (config_.slot_store != nullptr) {
    saved = config_.slot_store->saved_slots(*server, slot->replica);
  }
  std::vector<Lease> restoring;
  {
    MutexLock lock(mu_);
    if (!shutting_down_ && !server->exited() && (!job.replica || groups_.contains(job.model))) {
      slot->state = SlotState::kReady;
      touch(*slot);
      slot->idle_since = std::chrono::steady_clock::now();
      auto [group, fresh] = groups_.try_emplace(job.model);
      if (fresh || (!job.replica && job.pin_given)) {
        group->second.pinned = job.pinned;
      }
      if (fresh || (!job.replica && job.priority_given)) {
        group->second.priority = job.priority;
      }
      if (!job.replica) {
        group->second.request_options = job.request_options;
        group->second.cli_generation = job.cli_generation;
        group->second.options_stale = false;  // the housekeeper looks again if it is behind
      }
      group->second.replicas.push_back(slot);
      for (const int k : saved) {
        if (auto held = hold_for_restore(slot, k)) {
          restoring.push_back(std::move(*held));
        }
      }
      if (!job.replica) {
        last_loaded_ = job.model;
        absent_defaults_.erase(job.model);  // a default is back
      }
      finish_job(job, ok_status(), slot);
      republish();
      cv_.notify_all();  // a new replica: the model's line may move
    }
  }
  if (config_.slot_store != nullptr && job.done) {
    emit_slot_events(job.model, config_.slot_store->restore_into(*server, slot->replica, saved));
    {
      MutexLock lock(mu_);
      slot->restoring = false;
    }
    restoring.clear();  // the restored slots take requests now
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
        g->second.scale_blocked_until = std::chrono::steady_clock::now() + live_.scale_up_after;
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
                        bool spare_sessions, StopCause cause, std::string_view reloading) {
  Withdrawn withdrawn = withdraw(victims, reason, spare_sessions, cause, reloading);
  if (withdrawn.spared) {
    return false;
  }
  stop_withdrawn(withdrawn, reason);
  return true;
}

RouterCore::Withdrawn RouterCore::withdraw(const std::vector<std::shared_ptr<ServerSlot>>& victims,
                                           const char* reason, bool spare_sessions, StopCause cause,
                                           std::string_view reloading) {
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
    if (cause == StopCause::kPlanned && v->server->model_name() != reloading) {
      // Pinned after it was chosen (POST /internal/pin meanwhile): the pin wins.
      if (auto g = groups_.find(v->server->model_name()); g != groups_.end() && g->second.pinned) {
        logger("router")->info("'{}' is pinned; not stopping it ({})", g->first, reason);
        continue;
      }
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

std::vector<int> RouterCore::session_slots(const ServerSlot& slot) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < slot.pinned_slots.size(); ++i) {
    if (slot.pinned_slots[i]) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

void RouterCore::save_slots_before_stop(const std::shared_ptr<ServerSlot>& slot) {
  if (config_.slot_store == nullptr) {
    return;
  }
  std::vector<int> sessions;
  {
    MutexLock lock(mu_);
    sessions = session_slots(*slot);
  }
  emit_slot_events(slot->server->model_name(),
                   config_.slot_store->save_from(*slot->server, slot->replica, sessions));
}

void RouterCore::emit_slot_events(const std::string& model,
                                  const std::vector<SlotFileEvent>& events) const {
  for (const auto& f : events) {
    RouterEvent e{f.kind == SlotFileEvent::Kind::kSaved ? RouterEvent::Kind::kSlotSaved
                  : f.kind == SlotFileEvent::Kind::kRestored
                      ? RouterEvent::Kind::kSlotRestored
                      : RouterEvent::Kind::kSlotRestoreFailed,
                  model, f.detail, f.code};
    e.slot_file = f;
    emit(e);
  }
}

void RouterCore::stop_withdrawn(const Withdrawn& withdrawn, const char* reason) {
  for (const auto& v : withdrawn.owned) {
    save_slots_before_stop(v);
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
    stops.push_back(std::async(std::launch::async, [this, slot] {
      save_slots_before_stop(slot);  // the drain at shutdown is a planned stop too
      const auto signalled = std::chrono::steady_clock::now();
      slot->server->stop();
      // The same line as any stop: an operator sees each backend end, and how.
      const std::string exit = slot->server->exit_description();
      logger("router")->info(
          "stopped '{}' (shutdown; {}, in {:.1f} ms)", slot->server->model_name(),
          exit.empty() ? "not running" : exit,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - signalled)
              .count());
    }));
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
