// ContextMonitor: how much of each llama.cpp server's context is in use
// (seed 003's context rings). It reads the backend's GET /slots
// (llama-server's slot state: n_ctx, and the prompt and generated tokens each
// slot holds) directly, never through a Lease, so the LRU clock is not
// touched, and at most once a second.
//
// It polls only while someone watches: a follower of the event stream (then
// it publishes a "context" event per model each second while the figures
// change, and all of them again when a new follower arrives), or a /metrics
// scrape (which refreshes figures older than a second
// itself, with one refresh at a time).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/mutex.h"
#include "lemon/router/router.h"
#include "lemon/telemetry/event_bus.h"

namespace lemon::telemetry {

struct SlotContext {
  int replica = 0;  // which of the model's servers
  int id = 0;
  int n_ctx = 0;  // tokens this slot can hold
  int used = 0;   // prompt tokens it holds plus tokens generated
  bool processing = false;
};

struct ModelContext {
  std::string model;
  std::vector<SlotContext> slots;
  int used() const;
  int total() const;
  double fraction() const;  // used / total, 0 when total is 0
  nlohmann::json to_json() const;
};

// Parses llama-server's /slots answer (both the older object and the newer
// array form of "next_token"). Slots without n_ctx are skipped.
std::vector<SlotContext> parse_slots(const nlohmann::json& slots);

class ContextMonitor {
 public:
  ContextMonitor(Router& router, EventBus& events);
  ~ContextMonitor();  // stop()
  ContextMonitor(const ContextMonitor&) = delete;
  ContextMonitor& operator=(const ContextMonitor&) = delete;

  void start();
  void stop();

  // Per model, refreshed first if older than max_age.
  std::map<std::string, ModelContext> current(std::chrono::milliseconds max_age);

 private:
  void loop();
  std::map<std::string, ModelContext> poll() const;

  Router& router_;
  EventBus& events_;
  Mutex refresh_mu_;  // one refresh at a time
  Mutex mu_;
  CondVar cv_;
  std::map<std::string, ModelContext> latest_ LEMON_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point refreshed_ LEMON_GUARDED_BY(mu_){};
  bool stopping_ LEMON_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace lemon::telemetry
