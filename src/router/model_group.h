// ModelGroup: the replicas of one loaded model and the requests waiting for
// a free slot in any of them (issue #13 §2). Internal to src/router. Every
// field is guarded by RouterCore::mu_.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

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
  // A replica load for this model is queued or running.
  bool scaling_up = false;
  // Never evicted, expired or scaled down; only an explicit unload (or an
  // unpin) lets it go (issue #29 §3).
  bool pinned = false;
  // Evicted only by loads of an equal or higher priority (issue #29 §3).
  int priority = 0;
  // The request options of the load that published it (POST /load's),
  // which a reload for a new CLI layer keeps (issue #30 §1).
  std::optional<RecipeOptions> request_options;
  // The CLI layer's generation its options were made with (or last found
  // unchanged by), and whether they differ from what the CLI layer now
  // gives: then it is reloaded once idle (issue #30 §1).
  std::uint64_t cli_generation = 0;
  bool options_stale = false;
  // A replica could not start (no room): not before this.
  std::chrono::steady_clock::time_point scale_blocked_until{};

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
  int in_flight() const {
    int n = 0;
    for (const auto& r : replicas) {
      n += r->in_flight;
    }
    return n;
  }
  std::uint64_t lru_tick() const {
    std::uint64_t t = 0;
    for (const auto& r : replicas) {
      t = std::max(t, r->lru_tick);
    }
    return t;
  }
  void leave_line(std::uint64_t ticket) {
    line.erase(std::remove(line.begin(), line.end(), ticket), line.end());
  }
  bool in_line(std::uint64_t ticket) const {
    return std::find(line.begin(), line.end(), ticket) != line.end();
  }
};

}  // namespace lemon
