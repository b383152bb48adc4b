// LoadScheduler: the order of one model's load, apart from its effects
// (issue #28 §3). run() asks a LoadEffects for each step and decides the
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
//     │     ──► kOutOfMemory naming the estimate (issue #14 §2)
//     │ a failure a retry can fix (on_load_failure) ──► evict everything, start once more
//     └ any other failure ──► that error
//
// Once the router is shutting down, the step in progress is the last.
//
// Thread-safety: run() is a pure sequence of calls on `effects`; it holds no
// state and takes no lock.
#pragma once

#include <optional>
#include <string>

#include "lemon/core/error.h"

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
};

class LoadScheduler {
 public:
  static Status run(LoadEffects& effects);

 private:
  static Status recover_from_out_of_memory(LoadEffects& effects, Error failure);
};

}  // namespace lemon
