// Retirer: how servers leave: drained and taken out of the table
// (ServerTable::withdraw), their sessions' slots saved (SlotStore), their
// processes stopped (SIGTERM, grace, SIGKILL), each reported as
// kServerStopped. Every planned stop goes through here: evictions,
// unloads, keep-alive, scale-down, memory pressure, recovery, shutdown.
// It holds no state of its own.
//
// Thread-safety: every method from any thread, with no router lock held
// (it waits for drains and stops processes).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lemon/router/router.h"
#include "server_table.h"

namespace lemon {

class Retirer {
 public:
  Retirer(const RouterConfig& config, ServerTable& table) : config_(config), table_(table) {}

  // Drains and stops `victims`. False (none stopped) when `rule` spared
  // them (a session pinned since the caller chose them).
  bool retire(const std::vector<std::shared_ptr<ServerSlot>>& victims, const char* reason,
              const RetireRule& rule = {});
  // retire() in its two steps, for a load that starts its server while its
  // victims stop: withdraw() drains them and takes them out of the table;
  // stop() stops their processes.
  Withdrawn withdraw(const std::vector<std::shared_ptr<ServerSlot>>& victims, const char* reason,
                     const RetireRule& rule = {});
  void stop(const Withdrawn& withdrawn, const char* reason);
  // Shutdown: stops every server of `all` at once (one grace period, not
  // one per server), saving their slots first.
  void stop_at_shutdown(const Withdrawn& all);
  // SlotStore's outcomes as kSlotSaved, kSlotRestored and kSlotRestoreFailed.
  void report_slot_files(const std::string& model, const std::vector<SlotFileEvent>& events) const;

 private:
  // SlotStore::save_from for a drained server about to stop.
  void save_slots(const Withdrawal& w) const;

  const RouterConfig& config_;
  ServerTable& table_;
};

}  // namespace lemon
