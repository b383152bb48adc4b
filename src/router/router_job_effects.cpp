// RouterCore::JobEffects: what LoadScheduler's steps do for real, for one
// load job on the loader thread: serve from a loaded server, create the
// server, admit and start it, evict for memory or evict everything.
#include <algorithm>
#include <map>

#include "lemon/core/log.h"
#include "lemon/core/mutex.h"
#include "lemon/router/load_scheduler.h"
#include "lemon/router/memory_policy.h"
#include "load_job.h"
#include "router_core.h"

namespace lemon {

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
      if (auto g = core_.groups_.find(job_.model);
          !job_.pin_given && g != core_.groups_.end() && g->second.pinned) {
        job_.pinned = true;  // a pinned model reloaded with new options stays pinned
      }
      if (auto g = core_.groups_.find(job_.model);
          !job_.priority_given && g != core_.groups_.end()) {
        job_.priority = g->second.priority;  // so does its priority
      }
      target.priority = job_.priority;
      const std::vector<SlotView> table = core_.snapshot();
      if (auto pinned = pinned_in_the_way(table, target, core_.live_.limits); !pinned.empty()) {
        return pinned_error(job_.model,
                            std::string("the ") + model_type_name(server_->type()) +
                                " slots of --max-loaded-models",
                            pinned);
      }
      if (auto above = outranking_in_the_way(table, target, core_.live_.limits); !above.empty()) {
        // The queue held it back while a higher priority stood in its way
        // in its type; only the NPU, which the queue cannot see, gets here.
        return outranked_error(job_.model, job_.priority, above);
      }
      plan = plan_eviction(table, target, core_.live_.limits);
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
      core_.note_displaced(victims, job_.model);
    }
    for (const auto& e : plan) {
      logger("router")->info("evicting '{}' ({}) to load '{}'", e.model,
                             eviction_reason_name(e.reason), job_.model);
      core_.emit(
          {RouterEvent::Kind::kEvictionPlanned, e.model, eviction_reason_name(e.reason), {}});
    }
    if (!overlap) {
      core_.retire(victims, "evicted", false, StopCause::kPlanned, job_.model);
      return core_.start_and_publish(job_, server_);
    }
    // The (idle) victims leave the table now, so no request reaches them;
    // their processes stop on a thread of their own while the new server
    // starts, and the load is complete once both are.
    const Withdrawn withdrawn =
        core_.withdraw(victims, "evicted", false, StopCause::kPlanned, job_.model);
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
          if (name == job_.model || group.pinned || group.priority > job_.priority ||
              r->state != SlotState::kReady || r->retire_owned) {
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
      core_.note_displaced({victim}, job_.model);
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
        // Only an explicit unload takes a pinned model; a load never
        // evicts a higher priority.
        if (!group.pinned && group.priority <= job_.priority) {
          everyone.insert(everyone.end(), group.replicas.begin(), group.replicas.end());
        }
      }
      core_.note_displaced(everyone, job_.model);
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
    job_.evicted_all = true;
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
  bool failed_after_evict_all() const override {
    // Read when asked: a POST /load meanwhile (which joins this job) has
    // reset the cooldown, and the job then gets the whole policy.
    MutexLock lock(core_.mu_);
    return core_.cooldown_.failed_after_evict_all(job_.model);
  }

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

}  // namespace lemon
