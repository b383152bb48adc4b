// RouterParts: what a Router is made of, each part owning its state behind
// its own lock, built in this order and shut down by shutdown():
//
//   LiveSettings, ViewBoard, WaitQuota, MemoryReadings, DefaultModels,
//   Doorbells           leaves: their locks are taken last, they call out
//                       to nothing but the ViewBoard (WaitQuota)
//   ServerTable         servers, leases, lines, session pins
//   Retirer             drains and stops servers (no state)
//   LoadQueue           jobs, the loader thread, cooldown, blocked loads
//   Housekeeper         its thread: memory watch, defaults, options, pool
//
// Lock order: LoadQueue, then ServerTable, then WaitQuota, then the
// ViewBoard; the other leaves (LiveSettings, MemoryReadings,
// DefaultModels, the Housekeeper's own lock, the Doorbells) may be taken
// under any of these and take nothing else. Nothing waits while holding a
// lock another part needs: waits release their own lock, and the loader
// and the housekeeper wait on their Doorbells holding none.
//
// Internal to src/router: Router (lemon/router/router.h) holds one and
// states the contract.
#pragma once

#include <atomic>
#include <mutex>

#include "default_models.h"
#include "doorbell.h"
#include "housekeeper.h"
#include "lemon/router/router.h"
#include "live_settings.h"
#include "load_queue.h"
#include "memory_readings.h"
#include "retirer.h"
#include "server_table.h"
#include "view_board.h"
#include "wait_quota.h"

namespace lemon {

struct RouterParts {
  RouterParts(const ModelResolver& model_resolver, ServerFactory& server_factory,
              RouterConfig router_config);
  ~RouterParts();  // shutdown()
  RouterParts(const RouterParts&) = delete;
  RouterParts& operator=(const RouterParts&) = delete;

  // Fails queued loads, ends the running one and the housekeeper, and stops
  // every server (saving their slots). Every caller returns once it is
  // complete.
  void shutdown();

  const RouterConfig config;
  const ModelResolver& models;
  ServerFactory& factory;
  std::atomic<bool> stopping{false};
  std::atomic<bool> loads_queued{false};
  LiveSettings settings;
  ViewBoard board;
  WaitQuota quota;
  MemoryReadings readings;
  DefaultModels defaults;
  Doorbell loader_bell;
  Doorbell housekeeper_bell;
  ServerTable table;
  Retirer retirer;
  LoadQueue queue;
  Housekeeper housekeeper;

 private:
  void shutdown_now();
  std::once_flag shutdown_once_;
};

}  // namespace lemon
