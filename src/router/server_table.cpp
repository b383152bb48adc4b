#include "server_table.h"

#include <algorithm>

#include "events.h"
#include "lemon/core/clock.h"
#include "lemon/core/log.h"
#include "memory_admission.h"
#include "router_errors.h"
#include "waiting.h"

namespace lemon {

ServerTable::ServerTable(const RouterConfig& config, LiveSettings& settings,
                         MemoryReadings& readings, ViewBoard& board, TableSignals signals)
    : config_(config), settings_(settings), readings_(readings), board_(board), signals_(signals) {
  MutexLock lock(mu_);
  republish();
}

Result<std::optional<Lease>> ServerTable::lease(std::string_view model, const LeaseAsk& ask,
                                                WaitQuota::Place& place, const WaitHooks& hooks) {
  MutexLock lock(mu_);
  std::uint64_t ticket = ask.ticket;
  std::string line_of;  // made only when the request waits: the fast path allocates nothing
  if (ticket == 0) {
    auto it = groups_.find(model);
    if (it == groups_.end() || !it->second.serving()) {
      return std::optional<Lease>();
    }
    ModelGroup& group = it->second;
    const ModelType type = group.replicas.front()->server->type();
    if (ask.required && type != *ask.required) {
      return wrong_model_type(std::string(model), type, *ask.required);
    }
    if (auto replica = group.free_for_newcomer()) {
      return std::optional<Lease>(grant(replica, ask.keep_alive));
    }
    if (auto full = place.join(it->first)) {
      return *full;
    }
    ticket = next_ticket_++;
    group.join_line(ticket);
    line_of = it->first;
  } else {
    line_of = model;
  }
  {
    auto g = groups_.find(line_of);
    const std::string waiting = std::to_string(g == groups_.end() ? 0 : g->second.line.size());
    lock.unlock();  // the ticket is in the line; wait_for_slot copes with any change
    emit_event(config_, {RouterEvent::Kind::kWaitingForSlot, line_of, waiting, {}});
    lock.lock();
  }
  auto leased = wait_for_slot(lock, line_of, ticket, hooks);
  if (!leased.ok()) {
    return std::move(leased).error();
  }
  if (*leased) {
    return std::optional<Lease>(grant(*leased, ask.keep_alive));
  }
  return std::optional<Lease>();  // it stopped serving while the request waited
}

Result<std::shared_ptr<ServerSlot>> ServerTable::wait_for_slot(MutexLock& lock,
                                                               const std::string& model,
                                                               std::uint64_t ticket,
                                                               const WaitHooks& hooks) {
  auto leave = [&]() LEMON_REQUIRES(mu_) {
    if (auto g = groups_.find(model); g != groups_.end()) {
      g->second.leave_line(ticket);
      changed_.notify_all();  // whoever is behind may be first now
      if (signals_.loads_queued) {
        signals_.loader.ring();  // the model may no longer be busy
      }
    }
  };
  auto next_tick = std::chrono::steady_clock::now() + hooks.tick_interval;
  for (;;) {
    if (signals_.stopping) {
      leave();
      return router_shutting_down();
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
          changed_.notify_all();  // another slot may be free for the next in line
        }
        return replica;
      }
    }
    if (wait_step(mu_, changed_, lock, hooks, next_tick)) {
      leave();
      return Error(ErrorCode::kCancelled,
                   "client went away while waiting for a free slot of '" + model + "'");
    }
  }
}

Lease ServerTable::grant(const std::shared_ptr<ServerSlot>& slot,
                         std::optional<KeepAlive> keep_alive) {
  ++slot->in_flight;
  slot->touch(++lru_clock_);
  const int backend_slot = slot->claim_request_slot();
  if (keep_alive) {
    if (auto g = groups_.find(slot->server->model_name()); g != groups_.end()) {
      g->second.keep_alive = *keep_alive;
    }
  }
  return Lease(this, slot, backend_slot);
}

std::vector<Grant> ServerTable::grant_each(ModelGroup& group,
                                           const std::vector<std::optional<KeepAlive>>& wants) {
  std::vector<Grant> out;
  out.reserve(wants.size());
  for (const auto& keep_alive : wants) {
    Grant g;
    if (auto free = group.free_for_newcomer()) {
      g.lease.emplace(grant(free, keep_alive));
    } else {
      g.ticket = next_ticket_++;  // all slots taken: in its line, in arrival order
      group.join_line(g.ticket);
    }
    out.push_back(std::move(g));
  }
  return out;
}

void ServerTable::release(ServerSlot& slot, int backend_slot) {
  bool ring_loader = false;
  bool ring_housekeeper = false;
  {
    MutexLock lock(mu_);
    slot.touch(++lru_clock_);
    slot.set_backend_slot_busy(backend_slot, false);
    const bool idle = --slot.in_flight == 0;
    if (idle) {
      slot.idle_since = std::chrono::steady_clock::now();
    }
    auto g = groups_.find(slot.server->model_name());
    const bool waiters = (g != groups_.end() && !g->second.line.empty()) || pinned_waiters_ > 0;
    // A server going idle may be what a drain waits for.
    if ((idle && slot.state == SlotState::kDraining) || waiters) {
      changed_.notify_all();
    }
    // ... or what a load held back by fairness waits for.
    ring_loader = idle && signals_.loads_queued;
    // keep_alive 0: unload it now that it is idle.
    ring_housekeeper =
        idle && g != groups_.end() && g->second.keep_alive && g->second.keep_alive->count() == 0;
  }
  if (ring_loader) {
    signals_.loader.ring();
  }
  if (ring_housekeeper) {
    signals_.housekeeper.ring();
  }
}

Result<Lease> ServerTable::lease_server(std::uint64_t server_id, int backend_slot,
                                        const WaitHooks& hooks) {
  MutexLock lock(mu_);
  ++pinned_waiters_;
  struct Leave {
    int& count;
    ~Leave() { --count; }
  } leave{pinned_waiters_};  // destroyed while mu_ is still held
  auto next_tick = std::chrono::steady_clock::now() + hooks.tick_interval;
  for (;;) {
    if (signals_.stopping) {
      return router_shutting_down();
    }
    auto slot = find_server(groups_, server_id);
    if (!slot || slot->state != SlotState::kReady) {
      return Error(ErrorCode::kSessionLost,
                   "the server this session was pinned to is gone (evicted, unloaded, "
                   "crashed, or the router restarted)");
    }
    if ((slot->capacity == 0 || slot->in_flight < slot->capacity) &&
        slot->backend_slot_free(backend_slot)) {
      ++slot->in_flight;
      slot->touch(++lru_clock_);
      slot->set_backend_slot_busy(backend_slot, true);
      return Lease(this, slot, backend_slot);
    }
    if (wait_step(mu_, changed_, lock, hooks, next_tick)) {
      return Error(ErrorCode::kCancelled, "cancelled while waiting for the session's server");
    }
  }
}

bool ServerTable::pin_backend_slot(std::uint64_t server_id, int backend_slot) {
  MutexLock lock(mu_);
  auto slot = find_server(groups_, server_id);
  // Gone, or draining (withdraw() marked it before this pin): refused.
  return slot && slot->state == SlotState::kReady && slot->pin_backend_slot(backend_slot);
}

void ServerTable::unpin_backend_slot(std::uint64_t server_id, int backend_slot) {
  MutexLock lock(mu_);
  auto slot = find_server(groups_, server_id);
  if (slot && slot->unpin_backend_slot(backend_slot)) {
    changed_.notify_all();  // a request without a session may fit now
  }
}

ModelGroup* ServerTable::served_group(std::string_view model, const RecipeOptions* same_options) {
  auto it = groups_.find(model);
  if (it == groups_.end() || !it->second.serving() ||
      (same_options != nullptr &&
       !(it->second.replicas.front()->server->options() == *same_options))) {
    return nullptr;
  }
  return &it->second;
}

bool ServerTable::serving(std::string_view model) const {
  MutexLock lock(mu_);
  auto it = groups_.find(model);
  return it != groups_.end() && it->second.serving();
}

std::optional<std::vector<Grant>> ServerTable::grant_loaded(
    std::string_view model, const RecipeOptions* same_options,
    const std::vector<std::optional<KeepAlive>>& wants) {
  MutexLock lock(mu_);
  ModelGroup* group = served_group(model, same_options);
  if (group == nullptr) {
    return std::nullopt;
  }
  group->replicas.front()->touch(++lru_clock_);
  auto grants = grant_each(*group, wants);
  changed_.notify_all();
  return grants;
}

std::shared_ptr<ServerSlot> ServerTable::make_slot(std::shared_ptr<WrappedServer> server,
                                                   const SlotOrigin& origin) {
  MutexLock lock(mu_);
  int replica = 0;
  if (origin.replica) {
    if (auto g = groups_.find(origin.model); g != groups_.end()) {
      for (const auto& r : g->second.replicas) {
        replica = std::max(replica, r->replica + 1);
      }
    }
  }
  return std::make_shared<ServerSlot>(next_slot_id_++, std::move(server), replica, origin);
}

std::optional<Published> ServerTable::publish(const std::shared_ptr<ServerSlot>& slot,
                                              const Publication& p) {
  MutexLock lock(mu_);
  if (signals_.stopping || slot->server->exited() || (p.replica && !groups_.contains(p.model))) {
    return std::nullopt;
  }
  slot->state = SlotState::kReady;
  slot->touch(++lru_clock_);
  slot->idle_since = std::chrono::steady_clock::now();
  auto [it, fresh] = groups_.try_emplace(p.model);
  ModelGroup& group = it->second;
  if (fresh) {
    crashed_.erase(p.model);
  }
  if (fresh || (!p.replica && p.pin_given)) {
    group.pinned = p.pinned;
  }
  if (fresh || (!p.replica && p.priority_given)) {
    group.priority = p.priority;
  }
  group.replicas.push_back(slot);
  Published out;
  // Until its saved slots are restored (off the lock), the loader holds
  // them with leases no other request can have: a request for any other
  // slot starts at once, one for a restoring slot (its session) waits.
  for (const int k : p.saved_slots) {
    if (slot->hold_for_restore(k)) {
      out.restoring.push_back(Lease(this, slot, k));
    }
  }
  if (!p.replica) {
    last_loaded_ = p.model;
  }
  out.grants = grant_each(group, p.wants);  // granted together with publication
  republish();
  changed_.notify_all();  // a new replica: the model's line may move
  signals_.loader.ring();
  return out;
}

void ServerTable::end_restore(ServerSlot& slot) {
  MutexLock lock(mu_);
  slot.restoring = false;
}

StandingUpdate ServerTable::update_standing(std::string_view model, const LoadStanding& standing,
                                            const RecipeOptions* same_options) {
  MutexLock lock(mu_);
  ModelGroup* group = served_group(model, same_options);
  if (group == nullptr) {
    return StandingUpdate::kNotLoaded;
  }
  if (same_options != nullptr) {
    for (const auto& r : group->replicas) {
      r->touch(++lru_clock_);  // the same options: a no-op that refreshes the LRU clock
    }
  }
  const bool pin_changes = standing.pinned && group->pinned != *standing.pinned;
  const bool priority_changes = standing.priority && group->priority != *standing.priority;
  if (pin_changes) {
    group->pinned = *standing.pinned;
  }
  if (priority_changes) {
    group->priority = *standing.priority;
    signals_.loader.ring();  // a queued load it held back may go now
  }
  if (!pin_changes && !priority_changes) {
    return StandingUpdate::kUnchanged;
  }
  republish();
  return StandingUpdate::kChanged;
}

Withdrawn ServerTable::withdraw(const std::vector<std::shared_ptr<ServerSlot>>& victims,
                                const char* reason, const RetireRule& rule) {
  Withdrawn out;
  MutexLock lock(mu_);
  if (rule.spare_sessions && std::any_of(victims.begin(), victims.end(), [](const auto& v) {
        return v->state == SlotState::kReady && v->pinned > 0;
      })) {
    logger("router")->info("'{}' holds sessions; not stopping it ({})",
                           victims.front()->server->model_name(), reason);
    out.spared = true;
    return out;
  }
  std::vector<std::shared_ptr<ServerSlot>> owned;
  for (const auto& v : victims) {
    if (v->state == SlotState::kGone) {
      continue;
    }
    if (v->retire_owned) {
      out.others.push_back(v);  // someone else is already draining it
      continue;
    }
    if (rule.cause == StopCause::kPlanned && v->server->model_name() != rule.reloading) {
      // Pinned after it was chosen (POST /internal/pin meanwhile): the pin wins.
      if (auto g = groups_.find(v->server->model_name()); g != groups_.end() && g->second.pinned) {
        logger("router")->info("'{}' is pinned; not stopping it ({})", g->first, reason);
        continue;
      }
    }
    v->retire_owned = true;
    v->state = SlotState::kDraining;
    owned.push_back(v);
  }
  republish();
  changed_.notify_all();  // requests waiting in a victim's line start over
  auto drained = [&](const ServerSlot& s) {
    return s.in_flight == 0 || s.state == SlotState::kGone || signals_.stopping.load();
  };
  for (const auto& v : owned) {
    if (!drained(*v)) {
      std::string name = v->server->model_name();
      int busy = v->in_flight;
      lock.unlock();
      logger("router")->info("waiting for '{}' to finish {} request(s) before stopping it", name,
                             busy);
      emit_event(config_, {RouterEvent::Kind::kDrainWaiting, name, std::to_string(busy), {}});
      lock.lock();
      changed_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return drained(*v); });
    }
    out.owned.push_back({v, v->session_slots()});
    remove_replica(v);
  }
  return out;
}

void ServerTable::finish_stop(const Withdrawn& withdrawn) {
  MutexLock lock(mu_);
  for (const auto& w : withdrawn.owned) {
    w.slot->state = SlotState::kGone;
  }
  changed_.notify_all();
  for (const auto& v : withdrawn.others) {
    changed_.wait(lock, [&]() LEMON_REQUIRES(mu_) {
      return v->state == SlotState::kGone || signals_.stopping.load();
    });
  }
}

void ServerTable::drop_exited(const std::shared_ptr<ServerSlot>& slot) {
  MutexLock lock(mu_);
  if (auto g = groups_.find(slot->server->model_name());
      !slot->retire_owned && g != groups_.end() && g->second.replicas.size() == 1 &&
      g->second.replicas.front() == slot &&
      (g->second.pinned || g->second.priority != 0 || slot->request_options)) {
    crashed_[g->first] = {g->second.pinned, g->second.priority, slot->request_options};
  }
  remove_replica(slot);
  if (!slot->retire_owned) {
    slot->state = SlotState::kGone;
  }
  changed_.notify_all();
}

std::optional<StandingBeforeCrash> ServerTable::standing_before_crash(
    std::string_view model) const {
  MutexLock lock(mu_);
  auto it = crashed_.find(model);
  return it != crashed_.end() ? std::optional(it->second) : std::nullopt;
}

void ServerTable::forget_crash(std::string_view model) {
  MutexLock lock(mu_);
  if (model.empty()) {
    crashed_.clear();
  } else if (auto it = crashed_.find(model); it != crashed_.end()) {
    crashed_.erase(it);
  }
}

Withdrawn ServerTable::take_all() {
  Withdrawn all;
  MutexLock lock(mu_);
  for (auto& [name, group] : groups_) {
    for (auto& slot : group.replicas) {
      slot->retire_owned = true;
      all.owned.push_back({slot, slot->session_slots()});
    }
  }
  groups_.clear();
  republish();
  changed_.notify_all();
  return all;
}

void ServerTable::remove_replica(const std::shared_ptr<ServerSlot>& slot) {
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
  changed_.notify_all();
  signals_.loader.ring();  // a server left: a load held back may go
}

TableSnapshot ServerTable::snapshot() const {
  MutexLock lock(mu_);
  return snapshot_of(groups_);
}

std::vector<LoadedServerInfo> ServerTable::loaded() const {
  MutexLock lock(mu_);
  return describe_all(groups_);
}

std::optional<LoadedServerInfo> ServerTable::most_recently_loaded() const {
  MutexLock lock(mu_);
  return describe_most_recent(groups_, last_loaded_);
}

void ServerTable::changed() {
  MutexLock lock(mu_);
  republish();
  changed_.notify_all();
}

void ServerTable::republish() {
  std::vector<ServerView> servers;
  for (const auto& [name, group] : groups_) {
    for (const auto& r : group.replicas) {
      servers.push_back({describe(*r, group), r});
    }
  }
  const auto settings = settings_.now();
  std::vector<DeviceMemoryInfo> devices;
  if (readings_.on()) {
    devices = device_report(readings_.latest(), held_per_device(groups_), settings->budget);
  }
  board_.publish_servers(std::move(servers), std::move(devices), settings->values.limits);
}

}  // namespace lemon
