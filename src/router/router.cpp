// Router: the public face of RouterCore. Every call forwards; the contract
// is in lemon/router/router.h.
#include "lemon/router/router.h"

#include "router_core.h"

namespace lemon {

const char* router_event_name(RouterEvent::Kind kind) {
  switch (kind) {
    case RouterEvent::Kind::kLoadQueued:
      return "load_queued";
    case RouterEvent::Kind::kLoadJoined:
      return "load_joined";
    case RouterEvent::Kind::kLoadStarted:
      return "load_started";
    case RouterEvent::Kind::kEvictionPlanned:
      return "eviction_planned";
    case RouterEvent::Kind::kDrainWaiting:
      return "drain_waiting";
    case RouterEvent::Kind::kServerStopped:
      return "server_stopped";
    case RouterEvent::Kind::kServerCrashed:
      return "server_crashed";
    case RouterEvent::Kind::kLoadSucceeded:
      return "load_succeeded";
    case RouterEvent::Kind::kLoadFailed:
      return "load_failed";
    case RouterEvent::Kind::kRetryingAfterEvictAll:
      return "retrying_after_evict_all";
    case RouterEvent::Kind::kRetryingAfterOutOfMemory:
      return "retrying_after_out_of_memory";
    case RouterEvent::Kind::kWaitingForSlot:
      return "waiting_for_slot";
    case RouterEvent::Kind::kReplicaStarted:
      return "replica_started";
    case RouterEvent::Kind::kReplicaStopped:
      return "replica_stopped";
    case RouterEvent::Kind::kSlotSaved:
      return "slot_saved";
    case RouterEvent::Kind::kSlotRestored:
      return "slot_restored";
    case RouterEvent::Kind::kSlotRestoreFailed:
      return "slot_restore_failed";
  }
  return "";
}

Router::Router(const ModelResolver& models, ServerFactory& factory, RouterConfig config)
    : models_(models), core_(std::make_unique<RouterCore>(models, factory, std::move(config))) {}

std::string Router::named(std::string_view model_name) const {
  auto internal = models_.internal_name(model_name);
  return internal ? std::move(*internal) : std::string(model_name);
}

Router::~Router() = default;  // RouterCore's destructor shuts down

Result<Lease> Router::acquire(std::string_view model_name, const WaitHooks& hooks,
                              std::optional<ModelType> required,
                              std::optional<KeepAlive> keep_alive) {
  return core_->acquire(named(model_name), hooks, required, keep_alive);
}

Result<Lease> Router::acquire_server(std::uint64_t server_id, int backend_slot,
                                     const WaitHooks& hooks) {
  return core_->acquire_server(server_id, backend_slot, hooks);
}

bool Router::pin_backend_slot(std::uint64_t server_id, int backend_slot) {
  return core_->pin_backend_slot(server_id, backend_slot);
}

void Router::unpin_backend_slot(std::uint64_t server_id, int backend_slot) {
  core_->unpin_backend_slot(server_id, backend_slot);
}

Status Router::load(std::string_view model_name, const RecipeOptions& request_options,
                    const WaitHooks& hooks, const LoadStanding& standing) {
  return core_->load(named(model_name), request_options, hooks, standing);
}

void Router::forget_saved_slots(const std::string& model) {
  core_->forget_saved_slots(model);
}

long long Router::saved_slot_bytes(const std::string& model) const {
  return core_->saved_slot_bytes(model);
}

Status Router::set_pinned(std::string_view model_name, bool pinned) {
  return core_->set_pinned(named(model_name), pinned);
}

Status Router::unload(std::string_view model_name) {
  return core_->unload(named(model_name));
}

Router::LoadBlock Router::block_loads(std::string_view model_name) {
  std::string name = named(model_name);
  core_->block_loads(name);
  return LoadBlock(core_.get(), std::move(name));
}

Router::LoadBlock::~LoadBlock() {
  if (core_ != nullptr) {
    core_->unblock_loads(model_);
  }
}

void Router::unload_all() {
  core_->unload_all();
}

std::vector<LoadedServerInfo> Router::loaded() const {
  return core_->loaded();
}

std::map<std::string, std::int64_t> Router::keep_alive_expiries() const {
  return core_->keep_alive_expiries();
}

std::shared_ptr<const RouterView> Router::view() const {
  return core_->view();
}

std::optional<LoadedServerInfo> Router::most_recently_loaded() const {
  return core_->most_recently_loaded();
}

std::vector<DeviceMemoryInfo> Router::memory_report() const {
  return core_->memory_report();
}

SlotLimits Router::limits() const {
  return core_->view()->limits;
}

RecipeOptions Router::cli_options() const {
  return core_->cli_options();
}

void Router::apply_live_settings(const LiveRouterSettings& settings) {
  core_->apply_live_settings(settings);
}

void Router::shutdown() {
  core_->shutdown();
}

}  // namespace lemon
