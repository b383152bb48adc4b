#include "load_queue.h"

#include <algorithm>

#include "events.h"
#include "job_effects.h"
#include "lemon/core/log.h"
#include "lemon/router/load_scheduler.h"
#include "router_errors.h"
#include "waiting.h"

namespace lemon {
namespace {

Error blocked_error(std::string_view model) {
  return Error(ErrorCode::kConflict,
               "model '" + std::string(model) + "' is being deleted; try again when that ends",
               "model");
}

// Failures that say nothing about the model: the router stopping, a load
// refused because the model is being deleted or pinned models are in its way.
bool counts_towards_cooldown(ErrorCode code) {
  return code != ErrorCode::kShuttingDown && code != ErrorCode::kCancelled &&
         code != ErrorCode::kConflict && code != ErrorCode::kSlotsPinned;
}

// The keep_alive of each waiter that wants a lease, in order.
std::vector<std::optional<KeepAlive>> lease_wants(const LoadJob& job) {
  std::vector<std::optional<KeepAlive>> wants;
  for (const auto& w : job.waiters) {
    if (w->wants_lease) {
      wants.push_back(w->keep_alive);
    }
  }
  return wants;
}

}  // namespace

LoadQueue::LoadQueue(const LoaderParts& parts) : parts_(parts) {
  loader_ = std::thread([this] { loader_loop(); });
}

LoadQueue::~LoadQueue() {
  join();
}

Result<LoadWait> LoadQueue::await_load(std::string_view model_name,
                                       std::optional<ModelType> required,
                                       std::optional<KeepAlive> keep_alive, WaitQuota::Place& place,
                                       const WaitHooks& hooks) {
  MutexLock lock(mu_);
  if (parts_.table.serving(model_name)) {
    return LoadWait{};  // loaded meanwhile: look again
  }
  auto job = find_job(model_name, std::nullopt);
  bool created = false;
  if (!job) {
    // Resolving reads the disk, so not under the lock.
    lock.unlock();
    // A model brought back after its server crashed gets the options its
    // POST /load gave, as it had them.
    const auto before = parts_.table.standing_before_crash(model_name);
    auto made = make_load_job(parts_.models, *parts_.settings.now(), model_name,
                              before ? before->request_options : std::nullopt, required);
    lock.lock();
    if (!made.ok()) {
      return std::move(made).error();
    }
    if (blocked_.contains(model_name)) {
      return blocked_error(model_name);
    }
    if (parts_.table.serving(model_name) || find_job(model_name, std::nullopt)) {
      return LoadWait{};  // someone loaded or queued it meanwhile
    }
    if (auto resting = cooldown_.refusal((*made)->model, LoadCooldown::Clock::now())) {
      return *resting;
    }
    if (auto full = place.join((*made)->model)) {
      return *full;
    }
    job = *made;
    queue_.push_back(job);
    republish();
    created = true;
  } else if (auto full = place.join(job->model)) {
    return *full;
  }
  auto waiter = std::make_shared<LoadWaiter>(true, keep_alive);
  job->waiters.push_back(waiter);
  // The waiter is registered, so its outcome is recorded even while the
  // lock is released to report the event.
  report_and_announce(*job, created, "");
  auto waited = wait_for_job(lock, job, waiter, hooks);
  if (!waited.ok()) {
    return std::move(waited).error();
  }
  LoadWait out;
  out.model = job->model;
  out.lease = std::move(waiter->lease);
  out.ticket = waiter->ticket;
  return out;
}

Status LoadQueue::load(std::shared_ptr<LoadJob> job, const LoadStanding& standing,
                       const WaitHooks& hooks) {
  MutexLock lock(mu_);
  if (parts_.stopping) {
    return router_shutting_down();
  }
  if (blocked_.contains(job->model)) {
    return blocked_error(job->model);
  }
  cooldown_.reset(job->model);  // an explicit load always tries at once
  if (parts_.table.update_standing(job->model, standing, &job->options) !=
      StandingUpdate::kNotLoaded) {
    return ok_status();  // loaded with these options: standing applied, LRU refreshed
  }
  bool created = false;
  if (auto existing = find_job(job->model, job->options)) {
    job = existing;  // joins the job already queued for these options
  } else {
    queue_.push_back(job);
    republish();
    created = true;
  }
  // Applied in the step that publishes the model.
  if (standing.pinned) {
    job->pinned = *standing.pinned;
    job->pin_given = true;
  }
  if (standing.priority) {
    job->priority = *standing.priority;
    job->priority_given = true;
    parts_.bell.ring();  // a queued job's priority may let it go now
  }
  auto waiter = std::make_shared<LoadWaiter>(false, std::nullopt);
  job->waiters.push_back(waiter);
  report_and_announce(*job, created, "");
  return wait_for_job(lock, job, waiter, hooks);
}

void LoadQueue::block(std::string_view model) {
  MutexLock lock(mu_);
  blocked_.emplace(model);
}

void LoadQueue::unblock(const std::string& model) {
  MutexLock lock(mu_);
  auto it = blocked_.find(model);
  if (it != blocked_.end()) {
    blocked_.erase(it);
  }
}

bool LoadQueue::enqueue(const std::shared_ptr<LoadJob>& job, const char* detail) {
  MutexLock lock(mu_);
  if (parts_.stopping || (!job->replica && blocked_.contains(job->model))) {
    return false;
  }
  queue_.push_back(job);
  republish();
  if (job->replica) {
    job->announced = true;  // no queued event for a scale-up
    parts_.bell.ring();
    return true;
  }
  report_and_announce(*job, true, detail);
  return true;
}

bool LoadQueue::pending() const {
  MutexLock lock(mu_);
  return !queue_.empty() || (current_ && !current_->done);
}

bool LoadQueue::queued_or_blocked(std::string_view model) const {
  MutexLock lock(mu_);
  return find_job(model, std::nullopt) != nullptr || blocked_.contains(model);
}

bool LoadQueue::serve_loaded(LoadJob& job) {
  MutexLock lock(mu_);
  auto grants = parts_.table.grant_loaded(job.model, job.explicit_options ? &job.options : nullptr,
                                          lease_wants(job));
  if (!grants) {
    return false;
  }
  finish_job(job, ok_status(), std::move(*grants));
  return true;
}

std::optional<std::vector<Lease>> LoadQueue::publish(LoadJob& job,
                                                     const std::shared_ptr<ServerSlot>& slot,
                                                     std::vector<int> saved_slots) {
  MutexLock lock(mu_);
  Publication p{job.model,
                job.replica,
                job.pinned,
                job.pin_given,
                job.priority,
                job.priority_given,
                std::move(saved_slots),
                lease_wants(job)};
  auto published = parts_.table.publish(slot, p);
  if (!published) {
    return std::nullopt;
  }
  if (!job.replica) {
    parts_.defaults.back(job.model);
  }
  finish_job(job, ok_status(), std::move(published->grants));
  return std::move(published->restoring);
}

JobStanding LoadQueue::standing(LoadJob& job, const GroupState* loaded) {
  MutexLock lock(mu_);
  if (loaded != nullptr) {
    if (!job.pin_given && loaded->pinned) {
      job.pinned = true;  // a pinned model reloaded with new options stays pinned
    }
    if (!job.priority_given) {
      job.priority = loaded->priority;  // so does its priority
    }
  } else if (auto before = parts_.table.standing_before_crash(job.model)) {
    // Brought back after its server crashed: as it stood then.
    if (!job.pin_given) {
      job.pinned = before->pinned;
    }
    if (!job.priority_given) {
      job.priority = before->priority;
    }
  }
  return {job.pinned, job.priority};
}

bool LoadQueue::failed_after_evict_all(const std::string& model) const {
  MutexLock lock(mu_);
  return cooldown_.failed_after_evict_all(model);
}

void LoadQueue::fail_queued() {
  MutexLock lock(mu_);
  for (auto& job : queue_) {
    finish_job(*job, router_shutting_down());
  }
  queue_.clear();
  republish();
  parts_.bell.ring();
}

void LoadQueue::join() {
  parts_.bell.ring();
  if (loader_.joinable()) {
    loader_.join();
  }
}

std::shared_ptr<LoadJob> LoadQueue::find_job(std::string_view model,
                                             const std::optional<RecipeOptions>& options) const {
  auto joinable = [&](const std::shared_ptr<LoadJob>& job) {
    return job && !job->done && job->model == model && (!options || job->options == *options);
  };
  if (joinable(current_)) {
    return current_;
  }
  for (const auto& job : queue_) {
    if (joinable(job)) {
      return job;
    }
  }
  return nullptr;
}

void LoadQueue::report_and_announce(LoadJob& job, bool created, const char* detail) {
  const std::string model = job.model;
  // The caller's MutexLock still owns mu_ as far as it knows; mu_ is held
  // again before it is used.
  mu_.unlock();
  emit_event(parts_.config,
             {created ? RouterEvent::Kind::kLoadQueued : RouterEvent::Kind::kLoadJoined,
              model,
              detail,
              {}});
  mu_.lock();
  if (created) {
    job.announced = true;
    parts_.bell.ring();  // the loader may take it now
  }
}

Status LoadQueue::wait_for_job(MutexLock& lock, const std::shared_ptr<LoadJob>& job,
                               const std::shared_ptr<LoadWaiter>& waiter, const WaitHooks& hooks) {
  auto next_tick = std::chrono::steady_clock::now() + hooks.tick_interval;
  while (!waiter->done) {
    if (wait_step(mu_, finished_, lock, hooks, next_tick) && !waiter->done) {
      auto& ws = job->waiters;
      ws.erase(std::remove(ws.begin(), ws.end(), waiter), ws.end());
      if (ws.empty()) {
        parts_.bell.ring();  // a queued load nobody waits for may be dropped
      }
      return Error(ErrorCode::kCancelled, "client went away while '" + job->model + "' loaded");
    }
  }
  if (waiter->error) {
    return *waiter->error;
  }
  return ok_status();
}

void LoadQueue::finish_job(LoadJob& job, const Status& result, std::vector<Grant> grants) {
  std::size_t next = 0;
  for (const auto& w : job.waiters) {
    if (!result.ok()) {
      w->error = result.error();
    } else if (w->wants_lease && next < grants.size()) {
      Grant& g = grants[next++];
      if (g.lease) {
        w->lease = std::move(g.lease);
      } else {
        w->ticket = g.ticket;
      }
    }
    w->done = true;
  }
  job.waiters.clear();
  job.done = true;
  if (!result.ok() && job.default_load) {
    parts_.defaults.failed(job.model, result.error());
  }
  finished_.notify_all();
}

std::shared_ptr<LoadJob> LoadQueue::next_job(std::chrono::steady_clock::time_point& until) {
  until = std::chrono::steady_clock::time_point::max();
  if (queue_.empty()) {
    return nullptr;
  }
  std::vector<QueuedLoad> queue;
  queue.reserve(queue_.size());
  for (const auto& job : queue_) {
    queue.push_back({job->model, job->info.type, job->announced, job->replica,
                     job->explicit_options, job->queued_at, job->priority});
  }
  const TableSnapshot table = parts_.table.snapshot();
  const auto settings = parts_.settings.now();
  const NextLoad next =
      LoadScheduler::next(queue, table.slot_views(), settings->values.limits,
                          settings->values.max_starvation, std::chrono::steady_clock::now());
  until = next.look_again;
  std::shared_ptr<LoadJob> chosen;
  if (next.index) {
    chosen = queue_[*next.index];
  }
  auto reload_gone = [&](const LoadJob& job) LEMON_REQUIRES(mu_) {
    return job.options_reload && (table.find(job.model) == nullptr || blocked_.contains(job.model));
  };
  // A load that waits for a higher priority to leave, and that nobody waits
  // for any more, is dropped: it would evict for no one.
  std::vector<std::shared_ptr<LoadJob>> abandoned;
  for (const std::size_t i : next.outranked) {
    auto& job = queue_[i];
    if (reload_gone(*job) || (job->waiters.empty() && !job->default_load && !job->options_reload)) {
      abandoned.push_back(job);
    } else if (!job->outranked_logged) {
      job->outranked_logged = true;
      logger("router")->info(
          "'{}' (priority {}) waits in the queue: only a model of a higher priority could make "
          "room for it, and a load never evicts one",
          job->model, job->priority);
    }
  }
  if (chosen && reload_gone(*chosen)) {
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

void LoadQueue::loader_loop() {
  for (;;) {
    std::shared_ptr<LoadJob> job;
    while (!job) {
      const std::uint64_t seen = parts_.bell.rung();
      auto until = std::chrono::steady_clock::time_point::max();
      {
        MutexLock lock(mu_);
        if (parts_.stopping) {
          return;
        }
        job = next_job(until);
        if (job) {
          current_ = job;
          republish();
        }
      }
      if (!job) {
        parts_.bell.wait(seen, until);
      }
    }
    emit_event(parts_.config, {RouterEvent::Kind::kLoadStarted, job->model, {}, {}});
    Status result = run(*job);
    if (job->on_finish) {
      job->on_finish(result);
    }
    if (!result.ok()) {
      emit_event(parts_.config, {RouterEvent::Kind::kLoadFailed, job->model,
                                 result.error().message(), result.error().code()});
      logger("router")->error("loading '{}' failed: {}", job->model, result.error().message());
    }
    MutexLock lock(mu_);
    record_outcome(*job, result);
    if (!job->done) {
      finish_job(*job, result.ok()
                           ? Status(Error(ErrorCode::kInternal, "load finished without a server"))
                           : result);
    }
    current_.reset();
    republish();
  }
}

void LoadQueue::record_outcome(const LoadJob& job, Status& result) {
  if (!result.ok() && !job.evicted_all && cooldown_.failed_after_evict_all(job.model) &&
      is_retryable_load_failure(result.error().code())) {
    logger("router")->warn(
        "'{}' failed again; no model was evicted for it, as its last load failed with every "
        "other model evicted (POST /api/v1/load tries that again)",
        job.model);
  }
  if (result.ok()) {
    cooldown_.reset(job.model);
  } else if (counts_towards_cooldown(result.error().code())) {
    auto rest = cooldown_.record_failure(job.model, result.error(), LoadCooldown::Clock::now(),
                                         job.evicted_all);
    if (rest.count() > 0) {
      logger("router")->warn(
          "'{}' failed to load {} times in a row; not loading it again for {} s unless "
          "/load asks",
          job.model, cooldown_.consecutive_failures(job.model), rest.count());
      result = Error(result.error()).with_retry_after(static_cast<int>(rest.count()));
    }
  }
}

Status LoadQueue::run(LoadJob& job) {
  JobEffects effects(parts_, *this, job);
  if (job.replica) {
    return effects.run_replica();
  }
  return LoadScheduler::run(effects);
}

void LoadQueue::republish() {
  std::vector<std::string> loading;
  if (current_ && !current_->done) {
    loading.push_back(current_->model);
  }
  for (const auto& job : queue_) {
    loading.push_back(job->model);
  }
  parts_.loads_queued = !queue_.empty();
  parts_.board.publish_loading(std::move(loading));
}

}  // namespace lemon
