#include "job_effects.h"

#include <algorithm>
#include <map>
#include <thread>

#include "events.h"
#include "lemon/core/log.h"
#include "lemon/router/context_fit.h"
#include "lemon/router/memory_policy.h"
#include "memory_admission.h"
#include "router_errors.h"

namespace lemon {
namespace {

// kSlotsPinned for `model`, which could load only if the `pinned` models
// made room in `room` (a type's slots).
Error pinned_error(const std::string& model, const std::string& room,
                   const std::vector<std::string>& pinned) {
  std::string names;
  for (const auto& p : pinned) {
    names += (names.empty() ? "'" : ", '") + p + "'";
  }
  return Error(ErrorCode::kSlotsPinned,
               "'" + model + "' can load only if pinned " +
                   (pinned.size() == 1 ? "model " : "models ") + names + " made room (" + room +
                   "); unpin (POST /internal/pin) or unload one first",
               "model");
}

// kSlotsPinned for `model` of `priority`, which could load only if the
// `outranking` models, of a higher priority, made room on the NPU.
Error outranked_error(const std::string& model, int priority,
                      const std::vector<std::string>& outranking) {
  std::string names;
  for (const auto& p : outranking) {
    names += (names.empty() ? "'" : ", '") + p + "'";
  }
  return Error(ErrorCode::kSlotsPinned,
               "'" + model + "' (priority " + std::to_string(priority) + ") can load only if " +
                   names +
                   ", of a higher priority, left the NPU; a load never evicts a higher priority",
               "model");
}

}  // namespace

bool JobEffects::serve_loaded() {
  return queue_.serve_loaded(job_);
}

Status JobEffects::create_server() {
  auto server = make_server(job_.options, std::nullopt);
  if (!server.ok()) {
    return std::move(server).error();
  }
  server_ = std::move(server).value();
  return ok_status();
}

Status JobEffects::admit_and_start() {
  // Reading files and devices happens before any decision.
  job_.estimate = server_->memory_estimate();
  std::vector<DeviceReading> readings;
  if (parts_.readings.on()) {
    readings = parts_.readings.read_for(job_.estimate);
  }
  const TableSnapshot table = parts_.table.snapshot();
  const auto settings = parts_.settings.now();
  const JobStanding standing = queue_.standing(job_, table.find(job_.model));
  LoadTarget target{job_.model, server_->type(), server_->device(), standing.priority};
  const std::vector<SlotView> views = table.slot_views();
  const SlotLimits& limits = settings->values.limits;
  if (auto pinned = pinned_in_the_way(views, target, limits); !pinned.empty()) {
    return pinned_error(
        job_.model,
        std::string("the ") + model_type_name(server_->type()) + " slots of --max-loaded-models",
        pinned);
  }
  if (auto above = outranking_in_the_way(views, target, limits); !above.empty()) {
    // The queue held it back while a higher priority stood in its way in
    // its type; only the NPU, which the queue cannot see, gets here.
    return outranked_error(job_.model, standing.priority, above);
  }
  std::vector<Eviction> plan = plan_eviction(views, target, limits);
  std::vector<std::shared_ptr<ServerSlot>> victims;
  for (const auto& e : plan) {
    if (const GroupState* g = table.find(e.model)) {
      for (const auto& r : g->replicas) {
        victims.push_back(r.slot);
      }
    }
  }
  const std::size_t slot_victims = victims.size();
  if (server_->fits_context()) {
    if (Status fitted = fit_context_to_memory(table, readings, settings->budget, victims);
        !fitted.ok()) {
      return fitted;
    }
  }
  job_.charge = charge_of(*server_, job_.estimate);
  bool overlap = false;
  if (parts_.readings.on()) {
    const AdmissionAsk ask{job_.model, false, standing.priority, job_.charge};
    if (Status fits = admit_to_memory(table, ask, readings, settings->budget, victims, true);
        !fits.ok()) {
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
              may_start_while_victims_stop(
                  server_->device(), devices,
                  admit_to_memory(table, ask, readings, settings->budget, none, false).ok());
  }
  for (std::size_t i = slot_victims; i < victims.size(); ++i) {
    plan.push_back({victims[i]->server->model_name(), EvictionReason::kMemory});
  }
  parts_.defaults.displaced(table, victims, job_.model);
  for (const auto& e : plan) {
    logger("router")->info("evicting '{}' ({}) to load '{}'", e.model,
                           eviction_reason_name(e.reason), job_.model);
    emit_event(parts_.config,
               {RouterEvent::Kind::kEvictionPlanned, e.model, eviction_reason_name(e.reason), {}});
  }
  const RetireRule rule{false, StopCause::kPlanned, job_.model};
  if (!overlap) {
    parts_.retirer.retire(victims, "evicted", rule);
    return start_and_publish(server_, origin_of(*server_));
  }
  // The (idle) victims leave the table now, so no request reaches them;
  // their processes stop on a thread of their own while the new server
  // starts, and the load is complete once both are.
  const Withdrawn withdrawn = parts_.retirer.withdraw(victims, "evicted", rule);
  std::thread stopping([this, &withdrawn] { parts_.retirer.stop(withdrawn, "evicted"); });
  Status started = start_and_publish(server_, origin_of(*server_));
  stopping.join();
  return started;
}

bool JobEffects::evict_idle_for_memory() {
  const std::string device = primary_device(job_.estimate);
  const int priority = queue_.standing(job_, nullptr).priority;
  const TableSnapshot table = parts_.table.snapshot();
  std::vector<ServerMemory> servers;
  std::map<std::string, std::shared_ptr<ServerSlot>> by_id;
  for (const auto& g : table.groups) {
    for (const auto& r : g.replicas) {
      if (g.model == job_.model || g.pinned || g.priority > priority || !r.ready || r.retiring) {
        continue;
      }
      const std::string id = std::to_string(r.slot->id);
      servers.push_back({id, r.charges, r.in_flight, r.lru_tick});
      by_id[id] = r.slot;
    }
  }
  const auto plan = plan_out_of_memory_recovery(servers, device);
  if (plan.empty()) {
    return false;
  }
  const std::shared_ptr<ServerSlot> victim = by_id.at(plan.front());
  parts_.defaults.displaced(table, {victim}, job_.model);
  const std::string name = victim->server->model_name();
  logger("router")->warn("'{}' ran out of memory on {}; unloading idle '{}' and retrying",
                         job_.model, device, name);
  emit_event(parts_.config, {RouterEvent::Kind::kEvictionPlanned,
                             name,
                             eviction_reason_name(EvictionReason::kOutOfMemory),
                             {}});
  parts_.retirer.retire({victim}, "out-of-memory recovery");
  emit_event(parts_.config, {RouterEvent::Kind::kRetryingAfterOutOfMemory, job_.model, name,
                             ErrorCode::kOutOfMemory});
  return true;
}

bool JobEffects::evict_all(EvictAllReason reason, const Error& failure) {
  const int priority = queue_.standing(job_, nullptr).priority;
  const TableSnapshot table = parts_.table.snapshot();
  std::vector<std::shared_ptr<ServerSlot>> everyone;
  for (const auto& g : table.groups) {
    // Only an explicit unload takes a pinned model; a load never evicts a
    // higher priority.
    if (!g.pinned && g.priority <= priority) {
      for (const auto& r : g.replicas) {
        everyone.push_back(r.slot);
      }
    }
  }
  parts_.defaults.displaced(table, everyone, job_.model);
  if (reason == EvictAllReason::kAfterOutOfMemory) {
    if (everyone.empty()) {
      return false;
    }
    logger("router")->warn("'{}' still runs out of memory; evicting every model and retrying once",
                           job_.model);
    emit_event(parts_.config, {RouterEvent::Kind::kRetryingAfterEvictAll, job_.model,
                               failure.message(), ErrorCode::kOutOfMemory});
    parts_.retirer.retire(everyone, "evict-all after running out of memory");
    return true;
  }
  job_.evicted_all = true;
  logger("router")->warn("loading '{}' failed ({}); evicting every model and retrying once",
                         job_.model, failure.message());
  emit_event(parts_.config, {RouterEvent::Kind::kRetryingAfterEvictAll, job_.model,
                             failure.message(), failure.code()});
  parts_.retirer.retire(everyone, "evict-all after a failed load");
  return !everyone.empty();
}

Status JobEffects::fit_context_to_memory(const TableSnapshot& table,
                                         const std::vector<DeviceReading>& readings,
                                         const BudgetRule& rule,
                                         const std::vector<std::shared_ptr<ServerSlot>>& victims) {
  ContextFitAsk ask;
  ask.measured = parts_.readings.on();
  if (ask.measured) {
    ask.room = room_after(table, {job_.model, false, 0, {}}, readings, rule, victims);
  }
  ask.trained = server_->trained_context();
  const ContextFit fit =
      fit_context(ask, [this](int ctx) { return server_->memory_estimate_at(ctx); });
  job_.context =
      FittedContext{fit.ctx_size, context_fit_reason_name(fit.reason), describe_context_fit(fit)};
  server_->set_fitted_context(*job_.context);
  if (Status prepared = server_->prepare(); !prepared.ok()) {
    return prepared;  // its slot folder names the context it gets
  }
  job_.estimate = server_->memory_estimate();
  logger("router")->info("'{}': context fitted to memory: {}", job_.model, job_.context->detail);
  return ok_status();
}

DeviceBytes JobEffects::charge_of(const WrappedServer& server, const DeviceBytes& estimate) const {
  FootprintStore* footprints = parts_.config.footprints;
  return admission_charge(estimate, footprints != nullptr
                                        ? footprints->recall(footprint_key(server, estimate))
                                        : std::nullopt);
}

Status JobEffects::start_again() {
  auto retry = make_server(job_.options, job_.context);
  if (!retry.ok()) {
    return std::move(retry).error();
  }
  return start_and_publish(*retry, origin_of(**retry));
}

Error JobEffects::out_of_memory_everywhere(const Error& last) {
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

bool JobEffects::shutting_down() const {
  return parts_.stopping;
}

bool JobEffects::failed_after_evict_all() const {
  return queue_.failed_after_evict_all(job_.model);
}

Status JobEffects::run_replica() {
  const TableSnapshot table = parts_.table.snapshot();
  const GroupState* group = table.find(job_.model);
  if (group == nullptr || !group->serving()) {
    return Error(ErrorCode::kCancelled, "'" + job_.model + "' is no longer loaded");
  }
  const ServerSlot& first = *group->replicas.front().slot;
  // The same options, and the same context as the model's first server.
  auto server = make_server(first.server->options(), first.server->fitted_context());
  if (!server.ok()) {
    return std::move(server).error();
  }
  job_.estimate = (*server)->memory_estimate();
  job_.charge = charge_of(**server, job_.estimate);
  if (parts_.readings.on()) {
    const auto readings = parts_.readings.read_for(job_.estimate);
    const int priority = queue_.standing(job_, nullptr).priority;
    std::vector<std::shared_ptr<ServerSlot>> none;  // a replica evicts nothing
    Status fits =
        admit_to_memory(parts_.table.snapshot(), {job_.model, true, priority, job_.charge},
                        readings, parts_.settings.now()->budget, none, false);
    if (!fits.ok()) {
      logger("router")->info("no replica for '{}': {}", job_.model, fits.error().message());
      return fits;
    }
  }
  SlotOrigin origin = origin_of(**server);
  origin.replica = true;
  origin.request_options = first.request_options;  // the model's, as its first server has them
  origin.cli_generation = first.cli_generation;
  return start_and_publish(*server, origin);
}

Result<std::shared_ptr<WrappedServer>> JobEffects::make_server(
    const RecipeOptions& options, const std::optional<FittedContext>& fit) const {
  auto server = parts_.factory.create(job_.info, options);
  if (!server.ok()) {
    return server;
  }
  if (fit && (*server)->fits_context()) {
    (*server)->set_fitted_context(*fit);
  }
  if (auto prepared = (*server)->prepare(); !prepared.ok()) {
    return std::move(prepared).error();
  }
  return server;
}

SlotOrigin JobEffects::origin_of(const WrappedServer& server) const {
  SlotOrigin origin;
  origin.model = job_.model;
  origin.estimate = job_.estimate;
  origin.charged = job_.charge;
  origin.send_ahead = server.options().int_value("max_replicas", parts_.config.max_replicas) <= 1;
  origin.request_options = job_.request_options;
  origin.cli_generation = job_.cli_generation;
  return origin;
}

Status JobEffects::start_and_publish(const std::shared_ptr<WrappedServer>& server,
                                     const SlotOrigin& origin) {
  std::shared_ptr<ServerSlot> slot = parts_.table.make_slot(server, origin);
  std::weak_ptr<ServerSlot> weak = slot;
  ServerTable* table = &parts_.table;
  const RouterConfig* config = &parts_.config;
  server->set_exit_listener([table, config, weak] {
    auto exited = weak.lock();
    if (!exited) {
      return;
    }
    table->drop_exited(exited);
    emit_event(*config, {RouterEvent::Kind::kServerCrashed, exited->server->model_name(), {}, {}});
  });
  // Load progress and readiness, as the backend reports them (llama-server's
  // child mode), for the event stream.
  server->set_state_listener([config, model = job_.model](const BackendReport& state) {
    RouterEvent event{
        RouterEvent::Kind::kBackendReport, model, backend_phase_name(state.phase), {}};
    event.report = state;
    emit_event(*config, event);
  });
  Status started = server->start([this] { return parts_.stopping.load(); });
  if (!started.ok()) {
    if (started.error().code() == ErrorCode::kCancelled && parts_.stopping) {
      // Nobody cancelled it but the shutdown: the waiting client is told so
      // (kCancelled would mean it left, and get no answer).
      return Error(ErrorCode::kShuttingDown,
                   "the router is shutting down: the load of '" + job_.model + "' was stopped");
    }
    return started;
  }
  // Its saved slots are restored after it is published, off every lock:
  // until then the loader holds those slots (leases no other request can
  // have), so a request for any other slot starts at once and one for a
  // restoring slot (its session) waits for it.
  SlotStore* store = parts_.config.slot_store;
  std::vector<int> saved;
  if (store != nullptr) {
    saved = store->saved_slots(*server, slot->replica);
  }
  auto restoring = queue_.publish(job_, slot, saved);
  if (!restoring) {
    server->stop();
    if (parts_.stopping) {
      return router_shutting_down();
    }
    return Error(ErrorCode::kBackendExited,
                 "'" + job_.model + "' exited right after it became ready");
  }
  if (store != nullptr) {
    parts_.retirer.report_slot_files(job_.model,
                                     store->restore_into(*server, slot->replica, saved));
    parts_.table.end_restore(*slot);
    restoring->clear();  // the restored slots take requests now
  }
  if (job_.replica) {
    logger("router")->info("started replica {} of '{}' at {}", slot->replica, job_.model,
                           server->base_url());
    emit_event(parts_.config,
               {RouterEvent::Kind::kReplicaStarted, job_.model, std::to_string(slot->replica), {}});
    return ok_status();
  }
  logger("router")->info("loaded '{}' at {}", job_.model, server->base_url());
  emit_event(parts_.config,
             {RouterEvent::Kind::kLoadSucceeded, job_.model, server->base_url(), {}});
  return ok_status();
}

}  // namespace lemon
