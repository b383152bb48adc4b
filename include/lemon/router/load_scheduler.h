// LoadScheduler: the order of one model's load, apart from its effects.
// run() asks a LoadEffects for each step and decides the
// next from its outcome; the router's loader supplies the real effects
// (spawn, stop, HTTP), tests a recording fake.
//
//   already served by a loaded server? ── yes ──► done (its waiters are granted)
//   create the server (files, binary, arguments) ── fails ──► that error; nothing evicted
//   admit (memory), evict, start ── started ──► done
//     │ refused by admission (kInsufficientMemory) ──► that error; nothing evicted
//     │ out of memory (kOutOfMemory) ──► evict one idle server of its device (least
//     │     recently used) and start again, until it starts, fails otherwise or none
//     │     is left; then evict everything and start once more; out of memory still
//     │     ──► kOutOfMemory naming the estimate
//     │ a failure a retry can fix (on_load_failure) ──► evict everything, start once more
//     │     (not when the model's last load failed after evicting everything)
//     └ any other failure ──► that error
//
// Once the router is shutting down, the step in progress is the last.
//
// next() chooses which queued load goes first; it is a pure function of the
// queue and the table.
//
// Thread-safety: run() is a pure sequence of calls on `effects`; it holds no
// state and takes no lock. next() is pure.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/router/eviction_policy.h"

namespace lemon {

// Why everything is evicted before a last start.
enum class EvictAllReason {
  kAfterFailedLoad,   // a failure a retry can fix (seed 000 "Error Handling")
  kAfterOutOfMemory,  // every idle server of the device went and it is still out of memory
};

// What a load does, step by step. Each call may block (it spawns, stops and
// waits); none is made with the router's lock held.
class LoadEffects {
 public:
  virtual ~LoadEffects() = default;
  // True when a loaded server already serves the load (its waiters are
  // granted leases on it).
  virtual bool serve_loaded() = 0;
  // Creates and prepares the server: deterministic failures (missing files,
  // unknown recipe, bad arguments, missing binary) surface here.
  virtual Status create_server() = 0;
  // Plans the victims, admits the server against memory, stops the victims
  // and starts and publishes the server.
  virtual Status admit_and_start() = 0;
  // Stops the least recently used idle server of the failed load's device;
  // false when none is left.
  virtual bool evict_idle_for_memory() = 0;
  // Stops every server (after its requests drain); false when none was
  // loaded.
  virtual bool evict_all(EvictAllReason reason, const Error& failure) = 0;
  // A new server, started and published in place of the one that failed.
  virtual Status start_again() = 0;
  // The final error of a load that ran out of memory with nothing left to
  // evict, from the last failure.
  virtual Error out_of_memory_everywhere(const Error& last) = 0;
  virtual bool shutting_down() const = 0;
  // The model's last load failed even after everything was evicted, and it
  // has not loaded since (nor did POST /load ask again).
  virtual bool failed_after_evict_all() const = 0;
};

// One queued load as the queue's choice sees it.
struct QueuedLoad {
  std::string model;
  ModelType type = ModelType::kLlm;
  bool announced = false;      // its kLoadQueued event is out: it may start
  bool replica = false;        // a scale-up of a loaded model (evicts nothing)
  bool explicit_load = false;  // POST /load: a command, never held back by fairness
  std::chrono::steady_clock::time_point queued_at{};
  int priority = 0;  // the model's priority
};

// Which queued load starts now: its index, or none; then `look_again` is
// when one held back by fairness may go (max: only when the queue or the
// table changes).
struct NextLoad {
  std::optional<std::size_t> index;
  std::chrono::steady_clock::time_point look_again = std::chrono::steady_clock::time_point::max();
  // Loads held back because a server of a higher priority is in their way
  // (outranking_in_the_way()), by index: they wait for the table to change.
  std::vector<std::size_t> outranked;
};

class LoadScheduler {
 public:
  static Status run(LoadEffects& effects);

  // The queue's order: first come, first served among the
  // announced loads (one not yet announced holds back those behind it),
  // except that an automatic load that would evict a model still serving
  // requests (its type at the limit) waits while that model serves, at
  // most `max_starvation` from when it was queued, and a later load that
  // evicts nothing busy goes first meanwhile. A load, automatic or
  // explicit, that only a higher-priority server's eviction would make room
  // for waits, with no deadline, until that server leaves;
  // one that a pin blocks goes, to fail at once. `table` is the loaded
  // servers as they are now.
  static NextLoad next(const std::vector<QueuedLoad>& queue, const std::vector<SlotView>& table,
                       const SlotLimits& limits, std::chrono::milliseconds max_starvation,
                       std::chrono::steady_clock::time_point now);

 private:
  static Status recover_from_out_of_memory(LoadEffects& effects, Error failure);
};

}  // namespace lemon
