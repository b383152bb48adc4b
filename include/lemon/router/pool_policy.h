// The pool's timed decisions (seed 004 scenario 5), as
// a pure function over a snapshot with the time passed in: when a model gets
// another replica, when an idle replica stops, and when an idle model is
// unloaded after its keep-alive. No clocks, locks or I/O here.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lemon {

using PoolClock = std::chrono::steady_clock;

struct ReplicaPoolView {
  std::uint64_t id = 0;  // the server's slot id
  int replica = 0;       // 0 for the first server
  int in_flight = 0;
  bool ready = true;                   // false while draining
  PoolClock::time_point idle_since{};  // when in_flight last became 0
  int sessions = 0;                    // live sessions pinned to it
};

struct ModelPoolView {
  std::string model;
  std::vector<ReplicaPoolView> replicas;
  int waiting = 0;                        // requests in its line
  PoolClock::time_point waiting_since{};  // when its line last became non-empty
  bool scaling_up = false;                // a replica load is queued or running
  int max_replicas = 1;
  // The keep_alive its last request set (negative: forever), or nullopt.
  std::optional<std::chrono::milliseconds> keep_alive;
  bool pinned = false;  // keeps every replica: no keep-alive, no scale-down
};

struct PoolPolicy {
  std::chrono::milliseconds scale_up_after{2000};
  std::chrono::milliseconds scale_down_after{60000};
  std::optional<std::chrono::milliseconds> keep_alive;  // --keep-alive; nullopt: forever
};

struct PoolPlan {
  std::vector<std::string> scale_up;      // models that get one more replica
  std::vector<std::uint64_t> scale_down;  // idle replicas to stop
  std::vector<std::string> expired;       // idle models past their keep-alive
};

// - Scale up: a model whose requests have waited for a free slot for
//   scale_up_after, with fewer ready replicas than max_replicas and no
//   replica load under way, gets one more.
// - Keep-alive: a model with nothing in flight or waiting and no session on
//   any replica, idle (every replica) for its keep-alive (the request's,
//   else the policy's) is unloaded whole; 0 means at once, negative or none
//   means never.
// - Scale down: otherwise, replicas idle for scale_down_after that hold no
//   session stop, newest first, always leaving one ready replica.
// A replica with sessions stays while they live: they end by their own
// --session-ttl (or by DELETE), not by the pool's idle timers. A pinned
// model may scale up but is neither expired nor scaled down.
PoolPlan plan_pool(const std::vector<ModelPoolView>& models, PoolClock::time_point now,
                   const PoolPolicy& policy);

// When the keep-alive unloads `m` if nothing uses it meanwhile (Ollama's
// expires_at): its keep-alive after it last became idle, or after now while
// it is busy, waited for or holds sessions; nullopt when none applies
// (pinned, no keep-alive, or a negative one: loaded until told otherwise).
std::optional<PoolClock::time_point> keep_alive_deadline(const ModelPoolView& m,
                                                         PoolClock::time_point now,
                                                         const PoolPolicy& policy);

// After a change of the CLI layer of load options: a loaded
// model whose options it changes (`stale`) is reloaded once idle, never with
// requests in flight or waiting, and not while a load of it is queued.
struct OptionReloadView {
  std::string model;
  bool stale = false;
  int in_flight = 0;
  int waiting = 0;
  bool load_queued = false;
};
std::vector<std::string> reload_when_idle(const std::vector<OptionReloadView>& models);

}  // namespace lemon
