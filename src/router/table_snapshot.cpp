#include "table_snapshot.h"

#include <algorithm>

namespace lemon {

bool GroupState::serving() const {
  return std::any_of(replicas.begin(), replicas.end(), [](const auto& r) { return r.ready; });
}

int GroupState::in_flight() const {
  int n = 0;
  for (const auto& r : replicas) {
    n += r.in_flight;
  }
  return n;
}

std::uint64_t GroupState::lru_tick() const {
  std::uint64_t t = 0;
  for (const auto& r : replicas) {
    t = std::max(t, r.lru_tick);
  }
  return t;
}

std::vector<std::shared_ptr<ServerSlot>> GroupState::slots() const {
  std::vector<std::shared_ptr<ServerSlot>> out;
  out.reserve(replicas.size());
  for (const auto& r : replicas) {
    out.push_back(r.slot);
  }
  return out;
}

const GroupState* TableSnapshot::find(std::string_view model) const {
  for (const auto& g : groups) {
    if (g.model == model) {
      return &g;
    }
  }
  return nullptr;
}

std::vector<std::shared_ptr<ServerSlot>> TableSnapshot::all_slots() const {
  std::vector<std::shared_ptr<ServerSlot>> out;
  for (const auto& g : groups) {
    for (const auto& r : g.replicas) {
      out.push_back(r.slot);
    }
  }
  return out;
}

std::vector<SlotView> TableSnapshot::slot_views() const {
  std::vector<SlotView> views;
  views.reserve(groups.size());
  for (const auto& g : groups) {
    const WrappedServer& first = g.first();
    views.push_back({g.model, first.type(), first.device(), g.in_flight() + g.waiting, g.lru_tick(),
                     g.pinned, g.priority});
  }
  return views;
}

TableSnapshot snapshot_of(const ModelGroups& groups) {
  TableSnapshot out;
  out.groups.reserve(groups.size());
  for (const auto& [name, group] : groups) {
    GroupState g;
    g.model = name;
    g.waiting = static_cast<int>(group.line.size());
    g.waiting_since = group.waiting_since;
    g.keep_alive = group.keep_alive;
    g.pinned = group.pinned;
    g.priority = group.priority;
    for (const auto& r : group.replicas) {
      g.replicas.push_back({r, r->state == SlotState::kReady, r->retire_owned, r->in_flight,
                            r->lru_tick, r->idle_since, r->pinned, r->charges()});
    }
    out.groups.push_back(std::move(g));
  }
  return out;
}

ModelPoolView pool_view(const GroupState& group, int default_max_replicas) {
  ModelPoolView v;
  v.model = group.model;
  v.waiting = group.waiting;
  v.waiting_since = group.waiting_since;
  v.keep_alive = group.keep_alive;
  v.pinned = group.pinned;
  v.max_replicas = group.first().options().int_value("max_replicas", default_max_replicas);
  for (const auto& r : group.replicas) {
    v.replicas.push_back(
        {r.slot->id, r.slot->replica, r.in_flight, r.ready, r.idle_since, r.sessions});
  }
  return v;
}

}  // namespace lemon
