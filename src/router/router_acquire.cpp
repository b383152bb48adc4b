// RouterCore's request-facing half: leases, the wait lines and load jobs,
// session pins, acquire. Explicit loads and unloads are in
// router_load_unload.cpp, the queries in router_queries.cpp, memory
// admission in router_memory_admission.cpp, the loader thread in
// router_loader.cpp and the housekeeper in router_housekeeper.cpp.
#include "lemon/core/mutex.h"
#include "router_core.h"

#include <algorithm>

#include "lemon/core/clock.h"
#include "lemon/core/log.h"
#include "load_job.h"

namespace lemon {

RouterCore::RouterCore(const ModelResolver& models, ServerFactory& factory, RouterConfig config)
    : models_(models), factory_(factory), config_(std::move(config)) {
  {
    MutexLock lock(mu_);
    live_ = LiveRouterSettings::of(config_);
    republish();
    for (const auto& name : config_.default_models) {
      absent_defaults_[name] = AbsentDefault{name, std::nullopt, {}, {}, false};
    }
  }
  loader_ = std::thread([this] { loader_loop(); });
  housekeeper_ = std::thread([this] { housekeeper_loop(); });
}

RouterCore::~RouterCore() {
  shutdown();
}

void RouterCore::emit(const RouterEvent& event) const {
  if (config_.on_event) {
    config_.on_event(event);
  }
}

void RouterCore::announce(LoadJob& job) {
  job.announced = true;
  cv_.notify_all();  // the loader may take it now
}

void RouterCore::touch(ServerSlot& slot) {
  slot.lru_tick = ++lru_clock_;
  slot.last_use_ms.store(unix_ms_now(), std::memory_order_relaxed);
}

void RouterCore::release(ServerSlot& slot, int backend_slot) {
  MutexLock lock(mu_);
  touch(slot);
  if (backend_slot >= 0 && static_cast<std::size_t>(backend_slot) < slot.busy_slots.size()) {
    slot.busy_slots[static_cast<std::size_t>(backend_slot)] = false;
  }
  const bool idle = --slot.in_flight == 0;
  if (idle) {
    slot.idle_since = std::chrono::steady_clock::now();
  }
  auto g = groups_.find(slot.server->model_name());
  const bool waiters = (g != groups_.end() && !g->second.line.empty()) || pinned_waiters_ > 0;
  // A server going idle may be what a drain or a deferred load waits for.
  if ((idle && (slot.state == SlotState::kDraining || !queue_.empty())) || waiters) {
    cv_.notify_all();
  }
  if (idle && g != groups_.end() && g->second.keep_alive && g->second.keep_alive->count() == 0) {
    housekeeper_cv_.notify_all();  // keep_alive 0: unload it now that it is idle
  }
}

std::uint64_t RouterCore::join_line(ModelGroup& group) {
  if (group.line.empty()) {
    group.waiting_since = std::chrono::steady_clock::now();
  }
  const std::uint64_t ticket = next_ticket_++;
  group.line.push_back(ticket);
  return ticket;
}

Lease RouterCore::grant(const std::shared_ptr<ServerSlot>& slot,
                        std::optional<KeepAlive> keep_alive) {
  ++slot->in_flight;
  touch(*slot);
  int backend_slot = -1;
  if (slot->pinned > 0 || slot->restoring) {
    backend_slot = slot->slot_for_request();
    if (backend_slot >= 0) {
      slot->busy_slots[static_cast<std::size_t>(backend_slot)] = true;
    }
  }
  if (keep_alive) {
    if (auto g = groups_.find(slot->server->model_name()); g != groups_.end()) {
      g->second.keep_alive = *keep_alive;
    }
  }
  return Lease(this, slot, backend_slot);
}

std::shared_ptr<RouterCore::LoadJob> RouterCore::find_job(
    std::string_view model, const std::optional<RecipeOptions>& options) const {
  auto joinable = [&](const std::shared_ptr<LoadJob>& job) {
    return job && !job->done && job->model == model && (!options || job->options == *options);
  };
  if (joinable(current_job_)) {
    return current_job_;
  }
  for (const auto& job : queue_) {
    if (joinable(job)) {
      return job;
    }
  }
  return nullptr;
}

namespace {

Error wrong_type(const std::string& model, ModelType actual, ModelType required) {
  return Error(ErrorCode::kUnsupportedOperation,
               "model '" + model + "' has type '" + model_type_name(actual) +
                   "', but this route needs a model of type '" + model_type_name(required) + "'",
               "model");
}

}  // namespace

Error RouterCore::blocked_error(std::string_view model) {
  return Error(ErrorCode::kConflict,
               "model '" + std::string(model) + "' is being deleted; try again when that ends",
               "model");
}

void RouterCore::block_loads(std::string_view model) {
  MutexLock lock(mu_);
  blocked_.emplace(model);
}

void RouterCore::unblock_loads(const std::string& model) {
  MutexLock lock(mu_);
  auto it = blocked_.find(model);
  if (it != blocked_.end()) {
    blocked_.erase(it);
  }
}

Result<std::shared_ptr<RouterCore::LoadJob>> RouterCore::make_job(
    std::string_view model_name, const std::optional<RecipeOptions>& request_options,
    std::optional<ModelType> required) {
  auto info = models_.resolve(model_name);
  if (!info.ok()) {
    return std::move(info).error();
  }
  if (info->recipe == "remote") {
    // Served by another machine (issue #30 §3): the inference gateway sends
    // it there; nothing here loads it.
    return Error(ErrorCode::kServedRemotely,
                 "model '" + info->name +
                     "' is served by another machine (recipe remote): it is never loaded here",
                 "model");
  }
  if (required && info->type != *required) {
    return wrong_type(info->name, info->type, *required);
  }
  if (!info->downloaded) {
    std::string missing =
        info->missing_paths.empty() ? info->checkpoint() : info->missing_paths.front();
    return Error(ErrorCode::kModelFilesMissing,
                 "model '" + info->name + "' is not downloaded: missing " + missing, "model");
  }
  RecipeOptions layered =
      request_options ? request_options->inherit(info->saved_options) : info->saved_options;
  RecipeOptions cli;
  std::uint64_t cli_generation = 0;
  {
    MutexLock lock(mu_);
    cli = live_.cli_options;
    cli_generation = cli_generation_;
  }
  auto job = std::make_shared<LoadJob>();
  job->model = info->name;
  job->options = layered.inherit(cli).restricted_to(info->recipe);
  job->explicit_options = request_options.has_value();
  job->request_options = request_options;
  job->cli_generation = cli_generation;
  job->pinned = info->saved_pinned;
  job->priority = info->saved_priority;
  job->info = std::move(info.value());
  return job;
}

bool RouterCore::wait_step(MutexLock& lock, const WaitHooks& hooks,
                           std::chrono::steady_clock::time_point& next_tick) {
  if (!hooks.cancelled && !hooks.on_tick) {
    cv_.wait(lock);
    return false;
  }
  cv_.wait_until(lock, next_tick);
  if (std::chrono::steady_clock::now() < next_tick) {
    return false;
  }
  next_tick += hooks.tick_interval;
  // The hooks run without the lock. `lock` still owns mu_ as far as its
  // waits know, and mu_ is held again before it is used.
  mu_.unlock();
  const bool gone = hooks.cancelled && hooks.cancelled();
  if (!gone && hooks.on_tick) {
    hooks.on_tick();
  }
  mu_.lock();
  return gone;
}

Status RouterCore::wait_for_job(MutexLock& lock, const std::shared_ptr<LoadJob>& job,
                                const std::shared_ptr<LoadWaiter>& waiter, const WaitHooks& hooks) {
  auto next_tick = std::chrono::steady_clock::now() + hooks.tick_interval;
  while (!waiter->done) {
    if (wait_step(lock, hooks, next_tick) && !waiter->done) {
      auto& ws = job->waiters;
      ws.erase(std::remove(ws.begin(), ws.end(), waiter), ws.end());
      if (ws.empty()) {
        cv_.notify_all();  // a queued load nobody waits for may be dropped
      }
      return Error(ErrorCode::kCancelled, "client went away while '" + job->model + "' loaded");
    }
  }
  if (waiter->error) {
    return *waiter->error;
  }
  return ok_status();
}

std::optional<Error> RouterCore::queue_refusal(std::string_view model) const {
  if (queued_total_ >= config_.max_queued_total) {
    return Error(ErrorCode::kQueueFull,
                 std::to_string(queued_total_) +
                     " requests are already waiting for a model or a free slot "
                     "(--max-queued-requests-total); try again shortly")
        .with_retry_after(1);
  }
  auto it = queued_by_model_.find(model);
  if (it != queued_by_model_.end() && it->second >= config_.max_queued_per_model) {
    return Error(ErrorCode::kQueueFull,
                 std::to_string(it->second) + " requests are already waiting for '" +
                     std::string(model) + "' (--max-queued-requests); try again shortly",
                 "model")
        .with_retry_after(1);
  }
  return std::nullopt;
}

Result<std::shared_ptr<ServerSlot>> RouterCore::wait_for_slot(MutexLock& lock,
                                                              const std::string& model,
                                                              std::uint64_t ticket,
                                                              const WaitHooks& hooks) {
  auto leave = [&]() LEMON_REQUIRES(mu_) {
    if (auto g = groups_.find(model); g != groups_.end()) {
      g->second.leave_line(ticket);
      cv_.notify_all();  // whoever is behind may be first now
    }
  };
  auto next_tick = std::chrono::steady_clock::now() + hooks.tick_interval;
  for (;;) {
    if (shutting_down_) {
      leave();
      return Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down");
    }
    auto g = groups_.find(model);
    if (g == groups_.end() || !g->second.serving() || !g->second.in_line(ticket)) {
      leave();
      return std::shared_ptr<ServerSlot>();  // it stopped serving: start over
    }
    ModelGroup& group = g->second;
    if (group.line.front() == ticket) {
      if (auto replica = group.least_busy_free()) {
        group.line.pop_front();
        if (!group.line.empty()) {
          cv_.notify_all();  // another slot may be free for the next in line
        }
        return replica;
      }
    }
    if (wait_step(lock, hooks, next_tick)) {
      leave();
      return Error(ErrorCode::kCancelled,
                   "client went away while waiting for a free slot of '" + model + "'");
    }
  }
}

std::shared_ptr<ServerSlot> RouterCore::find_server(std::uint64_t server_id) const {
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      if (r->id == server_id) {
        return r;
      }
    }
  }
  return nullptr;
}

bool RouterCore::pin_backend_slot(std::uint64_t server_id, int backend_slot) {
  MutexLock lock(mu_);
  auto slot = find_server(server_id);
  if (!slot || slot->state != SlotState::kReady || slot->capacity <= 0 || backend_slot < 0 ||
      backend_slot >= slot->capacity) {
    return false;  // gone, or draining (retire() marked it before this pin)
  }
  const auto k = static_cast<std::size_t>(backend_slot);
  if (slot->pinned_slots.empty()) {
    slot->pinned_slots.assign(static_cast<std::size_t>(slot->capacity), false);
    slot->busy_slots.assign(static_cast<std::size_t>(slot->capacity), false);
  }
  if (!slot->pinned_slots[k]) {
    slot->pinned_slots[k] = true;
    ++slot->pinned;
  }
  return true;
}

void RouterCore::unpin_backend_slot(std::uint64_t server_id, int backend_slot) {
  MutexLock lock(mu_);
  auto slot = find_server(server_id);
  if (!slot || backend_slot < 0 ||
      static_cast<std::size_t>(backend_slot) >= slot->pinned_slots.size()) {
    return;
  }
  const auto k = static_cast<std::size_t>(backend_slot);
  if (slot->pinned_slots[k]) {
    slot->pinned_slots[k] = false;
    --slot->pinned;
    cv_.notify_all();  // a request without a session may fit now
  }
}

std::optional<Lease> RouterCore::hold_for_restore(const std::shared_ptr<ServerSlot>& slot,
                                                  int backend_slot) {
  if (backend_slot < 0 || backend_slot >= slot->capacity) {
    return std::nullopt;
  }
  if (slot->pinned_slots.empty()) {
    slot->pinned_slots.assign(static_cast<std::size_t>(slot->capacity), false);
    slot->busy_slots.assign(static_cast<std::size_t>(slot->capacity), false);
  }
  slot->busy_slots[static_cast<std::size_t>(backend_slot)] = true;
  slot->restoring = true;
  ++slot->in_flight;
  return Lease(this, slot, backend_slot);
}

Result<Lease> RouterCore::acquire_server(std::uint64_t server_id, int backend_slot,
                                         const WaitHooks& hooks) {
  MutexLock lock(mu_);
  ++pinned_waiters_;
  struct Leave {
    int& count;
    ~Leave() { --count; }
  } leave{pinned_waiters_};  // destroyed while mu_ is still held
  auto next_tick = std::chrono::steady_clock::now() + hooks.tick_interval;
  for (;;) {
    if (shutting_down_) {
      return Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down");
    }
    auto slot = find_server(server_id);
    if (!slot || slot->state != SlotState::kReady) {
      return Error(ErrorCode::kSessionLost,
                   "the server this session was pinned to is gone (evicted, unloaded, "
                   "crashed, or the router restarted)");
    }
    const bool slot_free = backend_slot < 0 ||
                           static_cast<std::size_t>(backend_slot) >= slot->busy_slots.size() ||
                           !slot->busy_slots[static_cast<std::size_t>(backend_slot)];
    if ((slot->capacity == 0 || slot->in_flight < slot->capacity) && slot_free) {
      ++slot->in_flight;
      touch(*slot);
      if (backend_slot >= 0 && static_cast<std::size_t>(backend_slot) < slot->busy_slots.size()) {
        slot->busy_slots[static_cast<std::size_t>(backend_slot)] = true;
      }
      return Lease(this, slot, backend_slot);
    }
    if (wait_step(lock, hooks, next_tick)) {
      return Error(ErrorCode::kCancelled, "cancelled while waiting for the session's server");
    }
  }
}

Result<Lease> RouterCore::acquire(std::string_view model_name, const WaitHooks& hooks,
                                  std::optional<ModelType> required,
                                  std::optional<KeepAlive> keep_alive) {
  MutexLock lock(mu_);
  // Counts this request against --max-queued-requests while it waits.
  // Declared after `lock`, so it is destroyed while mu_ is still held.
  std::optional<QueuePlace> place;
  auto join_queue = [&](const std::string& model) LEMON_REQUIRES(mu_) -> std::optional<Error> {
    if (place) {
      return std::nullopt;
    }
    if (auto full = queue_refusal(model)) {
      return full;
    }
    place.emplace(*this, model);
    return std::nullopt;
  };
  for (;;) {
    if (shutting_down_) {
      return Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down");
    }
    std::string line_of;  // a loaded model whose line to wait in
    std::uint64_t ticket = 0;
    // (1) Loaded and ready: lease its least busy replica, or wait for a slot.
    if (auto it = groups_.find(model_name); it != groups_.end() && it->second.serving()) {
      ModelGroup& group = it->second;
      ModelType type = group.replicas.front()->server->type();
      if (required && type != *required) {
        return wrong_type(std::string(model_name), type, *required);
      }
      if (auto replica = group.free_for_newcomer()) {
        return grant(replica, keep_alive);
      }
      if (auto full = join_queue(it->first)) {
        return *full;
      }
      ticket = join_line(group);
      line_of = it->first;
    } else {
      // (2) A load of this model is queued or running: join it.
      auto job = find_job(model_name, std::nullopt);
      bool created = false;
      if (!job) {
        // (3) Otherwise queue one. Resolving reads the disk, so not under mu_.
        lock.unlock();
        auto made = make_job(model_name, std::nullopt, required);
        lock.lock();
        if (!made.ok()) {
          return std::move(made).error();
        }
        if (blocked_.contains(model_name)) {
          return blocked_error(model_name);
        }
        auto now_loaded = groups_.find(model_name);
        if ((now_loaded != groups_.end() && now_loaded->second.serving()) ||
            find_job(model_name, std::nullopt)) {
          continue;  // someone loaded or queued it meanwhile
        }
        if (auto resting = cooldown_.refusal((*made)->model, LoadCooldown::Clock::now())) {
          return *resting;
        }
        if (auto full = join_queue((*made)->model)) {
          return *full;
        }
        job = *made;
        queue_.push_back(job);
        republish();
        created = true;
        cv_.notify_all();
      } else if (auto full = join_queue(job->model)) {
        return *full;
      }
      auto waiter = std::make_shared<LoadWaiter>(true);
      job->waiters.push_back(waiter);
      // The waiter is registered, so its outcome is recorded even while mu_ is
      // released to report the event.
      lock.unlock();
      emit({created ? RouterEvent::Kind::kLoadQueued : RouterEvent::Kind::kLoadJoined,
            job->model,
            {},
            {}});
      lock.lock();
      if (created) {
        announce(*job);
      }
      auto waited = wait_for_job(lock, job, waiter, hooks);
      if (!waited.ok()) {
        if (waiter->ticket != 0) {  // cancelled after it was put in a line
          if (auto g = groups_.find(job->model); g != groups_.end()) {
            g->second.leave_line(waiter->ticket);
          }
          cv_.notify_all();
        }
        return std::move(waited).error();
      }
      if (waiter->granted) {
        // in_flight was counted when the server was published.
        if (keep_alive) {
          if (auto g = groups_.find(job->model); g != groups_.end()) {
            g->second.keep_alive = *keep_alive;
          }
        }
        return Lease(this, waiter->granted, waiter->granted_slot);
      }
      if (waiter->ticket == 0) {
        continue;
      }
      line_of = job->model;
      ticket = waiter->ticket;
    }
    {
      auto g = groups_.find(line_of);
      const std::string waiting = std::to_string(g == groups_.end() ? 0 : g->second.line.size());
      lock.unlock();  // the ticket is in the line; wait_for_slot copes with any change
      emit({RouterEvent::Kind::kWaitingForSlot, line_of, waiting, {}});
      lock.lock();
    }
    auto leased = wait_for_slot(lock, line_of, ticket, hooks);
    if (!leased.ok()) {
      return std::move(leased).error();
    }
    if (*leased) {
      return grant(*leased, keep_alive);
    }
    // The model stopped serving while we waited: start over (load it again).
  }
}

}  // namespace lemon
