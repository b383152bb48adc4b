// RouterCore's explicit loads and unloads (POST /load, /unload, /delete's
// block): they queue a job like any acquire, or drain and remove replicas.
#include "router_core.h"

#include <algorithm>

#include "lemon/core/log.h"
#include "lemon/core/mutex.h"
#include "load_job.h"

namespace lemon {

Status RouterCore::load(std::string_view model_name, const RecipeOptions& request_options,
                        const WaitHooks& hooks, const LoadStanding& standing) {
  auto made = make_job(model_name, request_options);
  if (!made.ok()) {
    return std::move(made).error();
  }
  std::shared_ptr<LoadJob> job = *made;
  MutexLock lock(mu_);
  if (shutting_down_) {
    return Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down");
  }
  if (blocked_.contains(job->model)) {
    return blocked_error(job->model);
  }
  cooldown_.reset(job->model);  // an explicit load always tries at once
  if (auto it = groups_.find(job->model);
      it != groups_.end() && it->second.serving() &&
      it->second.replicas.front()->server->options() == job->options) {
    for (const auto& r : it->second.replicas) {
      touch(*r);  // same options: a no-op that refreshes the LRU clock
    }
    const bool pin_changes = standing.pinned && it->second.pinned != *standing.pinned;
    const bool priority_changes = standing.priority && it->second.priority != *standing.priority;
    if (pin_changes) {
      it->second.pinned = *standing.pinned;
    }
    if (priority_changes) {
      it->second.priority = *standing.priority;
      cv_.notify_all();  // a queued load it held back may go now
    }
    if (pin_changes || priority_changes) {
      republish();
    }
    return ok_status();
  }
  bool created = false;
  if (auto existing = find_job(job->model, job->options)) {
    job = existing;  // joins the job already queued for these options
  } else {
    queue_.push_back(job);
    republish();
    created = true;
    cv_.notify_all();
  }
  // Applied in the step that publishes the model.
  if (standing.pinned) {
    job->pinned = *standing.pinned;
    job->pin_given = true;
  }
  if (standing.priority) {
    job->priority = *standing.priority;
    job->priority_given = true;
    cv_.notify_all();  // a queued job's priority may let it go now
  }
  auto waiter = std::make_shared<LoadWaiter>(false);
  job->waiters.push_back(waiter);
  lock.unlock();
  emit({created ? RouterEvent::Kind::kLoadQueued : RouterEvent::Kind::kLoadJoined,
        job->model,
        {},
        {}});
  lock.lock();
  if (created) {
    announce(*job);
  }
  return wait_for_job(lock, job, waiter, hooks);
}

Status RouterCore::set_pinned(std::string_view model_name, bool pinned) {
  {
    MutexLock lock(mu_);
    auto g = groups_.find(std::string(model_name));
    if (g == groups_.end() || !g->second.serving()) {
      return Error(ErrorCode::kModelNotLoaded,
                   "model '" + std::string(model_name) + "' is not loaded", "model_name");
    }
    if (g->second.pinned == pinned) {
      return ok_status();
    }
    g->second.pinned = pinned;
    republish();
  }
  logger("router")->info("'{}' {}", model_name, pinned ? "pinned" : "unpinned");
  return ok_status();
}

Status RouterCore::unload(std::string_view model_name) {
  std::vector<std::shared_ptr<ServerSlot>> replicas;
  {
    MutexLock lock(mu_);
    replicas = replicas_of(model_name);
    if (replicas.empty()) {
      return Error(ErrorCode::kModelNotLoaded,
                   "model '" + std::string(model_name) + "' is not loaded", "model_name");
    }
  }
  retire(replicas, "unload", false, StopCause::kExplicitUnload);
  return ok_status();
}

void RouterCore::unload_all() {
  std::vector<std::shared_ptr<ServerSlot>> all;
  {
    MutexLock lock(mu_);
    for (const auto& [name, group] : groups_) {
      all.insert(all.end(), group.replicas.begin(), group.replicas.end());
    }
  }
  retire(all, "unload", false, StopCause::kExplicitUnload);
}

std::vector<std::shared_ptr<ServerSlot>> RouterCore::replicas_of(std::string_view model) const {
  auto it = groups_.find(model);
  return it == groups_.end() ? std::vector<std::shared_ptr<ServerSlot>>{} : it->second.replicas;
}

void RouterCore::remove_replica(const std::shared_ptr<ServerSlot>& slot) {
  auto g = groups_.find(slot->server->model_name());
  if (g == groups_.end()) {
    return;
  }
  auto& replicas = g->second.replicas;
  auto it = std::find(replicas.begin(), replicas.end(), slot);
  if (it == replicas.end()) {
    return;
  }
  replicas.erase(it);
  if (replicas.empty()) {
    groups_.erase(g);  // waiters in its line notice and start over
  }
  republish();
  cv_.notify_all();
}

}  // namespace lemon
