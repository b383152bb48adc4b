// Router: the loader thread's half. Loads leave the FIFO queue one at a time;
// for each, the eviction plan is computed from the table as it is *now*
// (seed 000 "Concurrency" 2), victims are drained and stopped with mu_
// released, and the new server is published together with the Leases of
// everyone waiting for it.
#include <algorithm>
#include <future>

#include "lemon/core/log.h"
#include "lemon/router/router.h"
#include "load_job.h"

namespace lemon {
namespace {

// Failures that say nothing about the model: the router stopping, a load
// refused because the model is being deleted.
bool counts_towards_cooldown(ErrorCode code) {
  return code != ErrorCode::kShuttingDown && code != ErrorCode::kCancelled &&
         code != ErrorCode::kConflict;
}

}  // namespace

void Router::loader_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      return shutting_down_.load() || (!queue_.empty() && queue_.front()->announced);
    });
    if (shutting_down_) {
      return;
    }
    auto job = queue_.front();
    queue_.pop_front();
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

void Router::finish_job(LoadJob& job, const Status& result,
                        const std::shared_ptr<ServerSlot>& slot) {
  for (const auto& w : job.waiters) {
    if (result.ok() && slot) {
      if (w->wants_lease && slot->has_free_slot()) {
        ++slot->in_flight;  // granted together with publication (Lemonade #1836)
        w->granted = slot;
      } else if (w->wants_lease) {
        w->queued_on = slot;  // all slots taken: first in its line, in arrival order
        w->ticket = next_ticket_++;
        slot->line.push_back(w->ticket);
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

Result<std::shared_ptr<WrappedServer>> Router::make_server(const LoadJob& job) {
  auto server = factory_.create(job.info, job.options);
  if (!server.ok()) {
    return server;
  }
  if (auto prepared = (*server)->prepare(); !prepared.ok()) {
    return std::move(prepared).error();
  }
  return server;
}

Status Router::run_job(LoadJob& job) {
  {
    std::lock_guard lock(mu_);
    auto it = slots_.find(job.model);
    if (it != slots_.end() && it->second->state == SlotState::kReady &&
        (!job.explicit_options || it->second->server->options() == job.options)) {
      touch(*it->second);
      finish_job(job, ok_status(), it->second);
      return ok_status();
    }
  }
  // Deterministic failures (missing files, unknown recipe, bad arguments,
  // missing binary) surface here, before anything is evicted.
  auto server = make_server(job);
  if (!server.ok()) {
    return std::move(server).error();
  }
  std::vector<std::shared_ptr<ServerSlot>> victims;
  std::vector<Eviction> plan;
  {
    std::lock_guard lock(mu_);
    LoadTarget target{job.model, (*server)->type(), (*server)->device()};
    plan = plan_eviction(snapshot(), target, config_.limits);
    for (const auto& e : plan) {
      victims.push_back(slots_.at(e.model));
    }
  }
  for (const auto& e : plan) {
    logger("router")->info("evicting '{}' ({}) to load '{}'", e.model,
                           eviction_reason_name(e.reason), job.model);
    emit({RouterEvent::Kind::kEvictionPlanned, e.model, eviction_reason_name(e.reason), {}});
  }
  retire(victims, "evicted");

  Status started = start_and_publish(job, *server);
  if (started.ok() || shutting_down_ ||
      on_load_failure(started.error().code(), 1) != FailureAction::kEvictAllAndRetry) {
    return started;
  }
  // Seed 000 "Error Handling": evict everything, then try once more.
  logger("router")->warn("loading '{}' failed ({}); evicting every model and retrying once",
                         job.model, started.error().message());
  emit({RouterEvent::Kind::kRetryingAfterEvictAll, job.model, started.error().message(),
        started.error().code()});
  std::vector<std::shared_ptr<ServerSlot>> everyone;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, slot] : slots_) {
      everyone.push_back(slot);
    }
  }
  retire(everyone, "evict-all after a failed load");
  auto retry = make_server(job);
  if (!retry.ok()) {
    return std::move(retry).error();
  }
  return start_and_publish(job, *retry);
}

Status Router::start_and_publish(LoadJob& job, const std::shared_ptr<WrappedServer>& server) {
  std::shared_ptr<ServerSlot> slot;
  {
    std::lock_guard lock(mu_);
    slot = std::make_shared<ServerSlot>(next_slot_id_++, server);
  }
  std::weak_ptr<ServerSlot> weak = slot;
  server->set_exit_listener([this, weak] { on_server_exit(weak); });
  Status started = server->start([this] { return shutting_down_.load(); });
  if (!started.ok()) {
    return started;
  }
  {
    std::lock_guard lock(mu_);
    if (!shutting_down_ && !server->exited()) {
      slot->state = SlotState::kReady;
      touch(*slot);
      slots_[job.model] = slot;
      last_loaded_ = job.model;
      finish_job(job, ok_status(), slot);
      republish();
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
  logger("router")->info("loaded '{}' at {}", job.model, server->base_url());
  emit({RouterEvent::Kind::kLoadSucceeded, job.model, server->base_url(), {}});
  return ok_status();
}

void Router::retire(const std::vector<std::shared_ptr<ServerSlot>>& victims, const char* reason) {
  std::vector<std::shared_ptr<ServerSlot>> owned;
  std::vector<std::shared_ptr<ServerSlot>> others;
  std::unique_lock lock(mu_);
  for (const auto& v : victims) {
    if (v->state == SlotState::kGone) {
      continue;
    }
    if (v->retire_owned) {
      others.push_back(v);  // someone else is already draining it
      continue;
    }
    v->retire_owned = true;
    v->state = SlotState::kDraining;
    owned.push_back(v);
  }
  republish();
  cv_.notify_all();  // requests waiting in a victim's line start over
  auto drained = [&](const ServerSlot& s) {
    return s.in_flight == 0 || s.state == SlotState::kGone || shutting_down_.load();
  };
  for (const auto& v : owned) {
    if (!drained(*v)) {
      std::string name = v->server->model_name();
      int busy = v->in_flight;
      lock.unlock();
      logger("router")->info("waiting for '{}' to finish {} request(s) before stopping it", name,
                             busy);
      emit({RouterEvent::Kind::kDrainWaiting, name, std::to_string(busy), {}});
      lock.lock();
      cv_.wait(lock, [&] { return drained(*v); });
    }
    auto it = slots_.find(v->server->model_name());
    if (it != slots_.end() && it->second == v) {
      slots_.erase(it);
      republish();
    }
  }
  lock.unlock();
  for (const auto& v : owned) {
    v->server->stop();
    logger("router")->info("stopped '{}' ({})", v->server->model_name(), reason);
    emit({RouterEvent::Kind::kServerStopped, v->server->model_name(), reason, {}});
  }
  lock.lock();
  for (const auto& v : owned) {
    v->state = SlotState::kGone;
  }
  cv_.notify_all();
  for (const auto& v : others) {
    cv_.wait(lock, [&] { return v->state == SlotState::kGone || shutting_down_.load(); });
  }
}

void Router::on_server_exit(const std::weak_ptr<ServerSlot>& weak) {
  auto slot = weak.lock();
  if (!slot) {
    return;
  }
  {
    std::lock_guard lock(mu_);
    auto it = slots_.find(slot->server->model_name());
    if (it != slots_.end() && it->second == slot) {
      slots_.erase(it);
      republish();
    }
    if (!slot->retire_owned) {
      slot->state = SlotState::kGone;
    }
    cv_.notify_all();
  }
  emit({RouterEvent::Kind::kServerCrashed, slot->server->model_name(), {}, {}});
}

void Router::shutdown() {
  // Every caller returns only once shutdown is complete (call_once blocks
  // concurrent callers), so a signal thread and main may both call it.
  std::call_once(shutdown_once_, [this] { shutdown_now(); });
}

void Router::shutdown_now() {
  shutting_down_.store(true);
  std::vector<std::shared_ptr<ServerSlot>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& job : queue_) {
      finish_job(*job, Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down"),
                 nullptr);
    }
    queue_.clear();
    republish();
    cv_.notify_all();
  }
  if (loader_.joinable()) {
    loader_.join();
  }
  {
    std::lock_guard lock(mu_);
    for (auto& [name, slot] : slots_) {
      slot->retire_owned = true;
      all.push_back(slot);
    }
    slots_.clear();
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
  std::lock_guard lock(mu_);
  for (const auto& slot : all) {
    slot->state = SlotState::kGone;
  }
}

}  // namespace lemon
