// Router: the public face of RouterParts. A request's acquire() goes to the
// table, and to the load queue when its model is not served; the other
// calls go to the part that owns what they ask about. The contract is in
// lemon/router/router.h.
#include "lemon/router/router.h"

#include "lemon/core/clock.h"
#include "lemon/core/enum_names.h"
#include "lemon/core/log.h"
#include "router_errors.h"
#include "router_parts.h"

namespace lemon {

namespace {

constexpr auto kRouterEventNames = std::to_array<EnumName<RouterEvent::Kind>>(
    {{RouterEvent::Kind::kLoadQueued, "load_queued"},
     {RouterEvent::Kind::kLoadJoined, "load_joined"},
     {RouterEvent::Kind::kLoadStarted, "load_started"},
     {RouterEvent::Kind::kEvictionPlanned, "eviction_planned"},
     {RouterEvent::Kind::kDrainWaiting, "drain_waiting"},
     {RouterEvent::Kind::kServerStopped, "server_stopped"},
     {RouterEvent::Kind::kServerCrashed, "server_crashed"},
     {RouterEvent::Kind::kLoadSucceeded, "load_succeeded"},
     {RouterEvent::Kind::kLoadFailed, "load_failed"},
     {RouterEvent::Kind::kRetryingAfterEvictAll, "retrying_after_evict_all"},
     {RouterEvent::Kind::kRetryingAfterOutOfMemory, "retrying_after_out_of_memory"},
     {RouterEvent::Kind::kWaitingForSlot, "waiting_for_slot"},
     {RouterEvent::Kind::kReplicaStarted, "replica_started"},
     {RouterEvent::Kind::kReplicaStopped, "replica_stopped"},
     {RouterEvent::Kind::kSlotSaved, "slot_saved"},
     {RouterEvent::Kind::kSlotRestored, "slot_restored"},
     {RouterEvent::Kind::kSlotRestoreFailed, "slot_restore_failed"},
     {RouterEvent::Kind::kBackendReport, "backend_state"}});

}  // namespace

const char* router_event_name(RouterEvent::Kind kind) {
  return name_of(kRouterEventNames, kind, "");
}

Router::Router(const ModelResolver& models, ServerFactory& factory, RouterConfig config)
    : parts_(std::make_unique<RouterParts>(models, factory, std::move(config))) {}

Router::~Router() = default;

std::string Router::named(std::string_view model_name) const {
  // A name the table serves is its servers' own: no catalogue lookup (which
  // looks at the model files on disk) on the path of every request to it.
  if (parts_->table.serving(model_name)) {
    return std::string(model_name);
  }
  auto internal = parts_->models.internal_name(model_name);
  return internal ? std::move(*internal) : std::string(model_name);
}  // RouterParts' destructor shuts down

Result<Lease> Router::acquire(std::string_view asked, const WaitHooks& hooks,
                              std::optional<ModelType> required,
                              std::optional<KeepAlive> keep_alive) {
  // Every form of a model's name reaches its servers (ModelResolver::internal_name).
  const std::string model_name = named(asked);
  RouterParts& p = *parts_;
  // Counts this request against --max-queued-requests once it waits.
  WaitQuota::Place place(p.quota);
  for (;;) {
    if (p.stopping) {
      return router_shutting_down();
    }
    // (1) Loaded and ready: lease its least busy replica, or wait for a slot.
    auto leased = p.table.lease(model_name, {required, keep_alive, 0}, place, hooks);
    if (!leased.ok()) {
      return std::move(leased).error();
    }
    if (*leased) {
      return std::move(**leased);
    }
    // (2) Not served: join or queue its load, and wait for it.
    auto loaded = p.queue.await_load(model_name, required, keep_alive, place, hooks);
    if (!loaded.ok()) {
      return std::move(loaded).error();
    }
    if (loaded->lease) {
      return std::move(*loaded->lease);  // granted with the server's publication
    }
    if (loaded->ticket == 0) {
      continue;  // loaded or queued by someone else meanwhile: look again
    }
    // (3) Its slots were all taken: wait in its line with the ticket.
    auto in_line =
        p.table.lease(loaded->model, {std::nullopt, keep_alive, loaded->ticket}, place, hooks);
    if (!in_line.ok()) {
      return std::move(in_line).error();
    }
    if (*in_line) {
      return std::move(**in_line);
    }
    // The model stopped serving while we waited: start over (load it again).
  }
}

Result<Lease> Router::acquire_server(std::uint64_t server_id, int backend_slot,
                                     const WaitHooks& hooks) {
  return parts_->table.lease_server(server_id, backend_slot, hooks);
}

bool Router::pin_backend_slot(std::uint64_t server_id, int backend_slot) {
  return parts_->table.pin_backend_slot(server_id, backend_slot);
}

void Router::unpin_backend_slot(std::uint64_t server_id, int backend_slot) {
  parts_->table.unpin_backend_slot(server_id, backend_slot);
}

Status Router::load(std::string_view asked, const RecipeOptions& request_options,
                    const WaitHooks& hooks, const LoadStanding& standing) {
  // Every form of a model's name reaches its servers (ModelResolver::internal_name).
  const std::string model_name = named(asked);
  auto made = make_load_job(parts_->models, *parts_->settings.now(), model_name, request_options);
  if (!made.ok()) {
    return std::move(made).error();
  }
  return parts_->queue.load(*made, standing, hooks);
}

void Router::forget_saved_slots(const std::string& model) {
  if (parts_->config.slot_store != nullptr) {
    parts_->config.slot_store->forget(model);
  }
}

long long Router::saved_slot_bytes(const std::string& model) const {
  return parts_->config.slot_store != nullptr ? parts_->config.slot_store->saved_bytes(model) : 0;
}

std::optional<DeviceBytes> Router::remembered_footprint(const std::string& model) const {
  return parts_->config.footprints != nullptr ? parts_->config.footprints->last_of(model)
                                              : std::nullopt;
}

Status Router::set_pinned(std::string_view asked, bool pinned) {
  // Every form of a model's name reaches its servers (ModelResolver::internal_name).
  const std::string model_name = named(asked);
  switch (parts_->table.update_standing(model_name, {pinned, std::nullopt}, nullptr)) {
    case StandingUpdate::kNotLoaded:
      return Error(ErrorCode::kModelNotLoaded,
                   "model '" + std::string(model_name) + "' is not loaded", "model_name");
    case StandingUpdate::kUnchanged:
      return ok_status();
    case StandingUpdate::kChanged:
      break;
  }
  logger("router")->info("'{}' {}", model_name, pinned ? "pinned" : "unpinned");
  return ok_status();
}

Status Router::unload(std::string_view asked) {
  // Every form of a model's name reaches its servers (ModelResolver::internal_name).
  const std::string model_name = named(asked);
  parts_->table.forget_crash(model_name);  // an unload is the user's say
  const TableSnapshot table = parts_->table.snapshot();
  const GroupState* group = table.find(model_name);
  if (group == nullptr) {
    return Error(ErrorCode::kModelNotLoaded,
                 "model '" + std::string(model_name) + "' is not loaded", "model_name");
  }
  parts_->retirer.retire(group->slots(), "unload", {false, StopCause::kExplicitUnload, {}});
  return ok_status();
}

Router::LoadBlock Router::block_loads(std::string_view asked) {
  // Every form of a model's name reaches its servers (ModelResolver::internal_name).
  const std::string model_name = named(asked);
  parts_->queue.block(model_name);
  return LoadBlock(&parts_->queue, std::string(model_name));
}

Router::LoadBlock::~LoadBlock() {
  if (queue_ != nullptr) {
    queue_->unblock(model_);
  }
}

std::vector<std::string> Router::relieve_pressure(double used_fraction) {
  return parts_->housekeeper.relieve_pressure(used_fraction);
}

void Router::unload_all() {
  parts_->table.forget_crash("");
  parts_->retirer.retire(parts_->table.snapshot().all_slots(), "unload",
                         {false, StopCause::kExplicitUnload, {}});
}

std::vector<LoadedServerInfo> Router::loaded() const {
  return parts_->table.loaded();
}

std::map<std::string, std::int64_t> Router::keep_alive_expiries() const {
  const std::int64_t unix_now = unix_ms_now();
  const TableSnapshot table = parts_->table.snapshot();
  const auto now = std::chrono::steady_clock::now();
  const PoolPolicy policy = parts_->settings.now()->pool_policy();
  std::map<std::string, std::int64_t> out;
  for (const auto& g : table.groups) {
    if (auto deadline =
            keep_alive_deadline(pool_view(g, parts_->config.max_replicas), now, policy)) {
      out.emplace(
          g.model,
          unix_now +
              std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now).count());
    }
  }
  return out;
}

std::shared_ptr<const RouterView> Router::view() const {
  return parts_->board.view();
}

std::optional<LoadedServerInfo> Router::most_recently_loaded() const {
  return parts_->table.most_recently_loaded();
}

SlotLimits Router::limits() const {
  return view()->limits;
}

RecipeOptions Router::cli_options() const {
  return parts_->settings.now()->values.cli_options;
}

void Router::apply_live_settings(const LiveRouterSettings& settings) {
  parts_->settings.apply(settings);
  parts_->table.changed();
  parts_->loader_bell.ring();  // a raised limit may let a queued load go
  parts_->housekeeper_bell.ring();
}

void Router::shutdown() {
  parts_->shutdown();
}

}  // namespace lemon
