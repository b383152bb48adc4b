// ModelGroup: the replicas of one loaded model, the requests waiting for a
// free slot in any of them, and how the model stands against evictions.
// Internal to src/router; every field is guarded by the ServerTable's lock.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/router/loaded_server_info.h"
#include "server_slot.h"

namespace lemon {

struct ModelGroup {
  // Ready or draining replicas, in the order they were published.
  std::vector<std::shared_ptr<ServerSlot>> replicas;
  // Tickets of requests waiting for a free slot in any replica, first first.
  std::deque<std::uint64_t> line;
  // When the line last went from empty to non-empty (for scale-up).
  std::chrono::steady_clock::time_point waiting_since{};
  // keep_alive of the last request that named one (Ollama's semantics):
  // how long the model stays loaded once idle; nullopt: --keep-alive.
  std::optional<std::chrono::milliseconds> keep_alive;
  // Never evicted, expired or scaled down; only an explicit unload (or an
  // unpin) lets it go.
  bool pinned = false;
  // Evicted only by loads of an equal or higher priority.
  int priority = 0;

  // True when some replica takes new requests.
  bool serving() const {
    return std::any_of(replicas.begin(), replicas.end(),
                       [](const auto& r) { return r->state == SlotState::kReady; });
  }
  // The ready replica with a free slot and the fewest requests in flight
  // (ties: the oldest), or null.
  std::shared_ptr<ServerSlot> least_busy_free() const {
    std::shared_ptr<ServerSlot> best;
    for (const auto& r : replicas) {
      if (r->state != SlotState::kReady || !r->has_capacity()) {
        continue;
      }
      if (!best || r->in_flight < best->in_flight) {
        best = r;
      }
    }
    return best;
  }
  // A new request may be leased at once: a free slot and nobody waiting.
  std::shared_ptr<ServerSlot> free_for_newcomer() const {
    return line.empty() ? least_busy_free() : nullptr;
  }
  // Puts `ticket` at the end of the line.
  void join_line(std::uint64_t ticket) {
    if (line.empty()) {
      waiting_since = std::chrono::steady_clock::now();
    }
    line.push_back(ticket);
  }
  void leave_line(std::uint64_t ticket) {
    line.erase(std::remove(line.begin(), line.end(), ticket), line.end());
  }
  bool in_line(std::uint64_t ticket) const {
    return std::find(line.begin(), line.end(), ticket) != line.end();
  }
};

// The table's groups, by model name.
using ModelGroups = std::map<std::string, ModelGroup, std::less<>>;

// The server with this id among `groups`, or null.
std::shared_ptr<ServerSlot> find_server(const ModelGroups& groups, std::uint64_t server_id);
// A server as /health reports it, with its group's line and standing.
LoadedServerInfo describe(const ServerSlot& slot, const ModelGroup& group);
// Every server of `groups`, described, by model and then publication.
std::vector<LoadedServerInfo> describe_all(const ModelGroups& groups);
// The first server of `last_loaded` (the model whose load published last)
// while it is loaded, else the server with the highest id; nullopt when
// there is none.
std::optional<LoadedServerInfo> describe_most_recent(const ModelGroups& groups,
                                                     std::string_view last_loaded);
// What the servers of `groups` hold per device.
DeviceBytes held_per_device(const ModelGroups& groups);

}  // namespace lemon
