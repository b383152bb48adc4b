#include "retirer.h"

#include <chrono>
#include <future>

#include "events.h"
#include "lemon/core/log.h"

namespace lemon {

bool Retirer::retire(const std::vector<std::shared_ptr<ServerSlot>>& victims, const char* reason,
                     const RetireRule& rule) {
  Withdrawn withdrawn = withdraw(victims, reason, rule);
  if (withdrawn.spared) {
    return false;
  }
  stop(withdrawn, reason);
  return true;
}

Withdrawn Retirer::withdraw(const std::vector<std::shared_ptr<ServerSlot>>& victims,
                            const char* reason, const RetireRule& rule) {
  return table_.withdraw(victims, reason, rule);
}

void Retirer::stop(const Withdrawn& withdrawn, const char* reason) {
  for (const auto& w : withdrawn.owned) {
    save_slots(w);
    const auto signalled = std::chrono::steady_clock::now();
    w.slot->server->stop();
    RouterEvent stopped{
        RouterEvent::Kind::kServerStopped, w.slot->server->model_name(), reason, {}};
    stopped.stop_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
    stopped.exit = w.slot->server->exit_description();
    logger("router")->info("stopped '{}' ({}; {}, in {:.1f} ms)", stopped.model, reason,
                           stopped.exit.empty() ? "not running" : stopped.exit,
                           stopped.stop_s * 1000.0);
    emit_event(config_, stopped);
  }
  table_.finish_stop(withdrawn);
}

void Retirer::stop_at_shutdown(const Withdrawn& all) {
  std::vector<std::future<void>> stops;
  stops.reserve(all.owned.size());
  for (const auto& w : all.owned) {
    stops.push_back(std::async(std::launch::async, [this, &w] {
      save_slots(w);  // the drain at shutdown is a planned stop too
      const auto signalled = std::chrono::steady_clock::now();
      w.slot->server->stop();
      // The same line as any stop: an operator sees each backend end, and how.
      const std::string exit = w.slot->server->exit_description();
      logger("router")->info(
          "stopped '{}' (shutdown; {}, in {:.1f} ms)", w.slot->server->model_name(),
          exit.empty() ? "not running" : exit,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - signalled)
              .count());
    }));
  }
  for (auto& f : stops) {
    f.wait();
  }
  table_.finish_stop(all);
}

void Retirer::save_slots(const Withdrawal& w) const {
  if (config_.slot_store == nullptr) {
    return;
  }
  report_slot_files(
      w.slot->server->model_name(),
      config_.slot_store->save_from(*w.slot->server, w.slot->replica, w.session_slots));
}

void Retirer::report_slot_files(const std::string& model,
                                const std::vector<SlotFileEvent>& events) const {
  for (const auto& f : events) {
    RouterEvent e{f.kind == SlotFileEvent::Kind::kSaved ? RouterEvent::Kind::kSlotSaved
                  : f.kind == SlotFileEvent::Kind::kRestored
                      ? RouterEvent::Kind::kSlotRestored
                      : RouterEvent::Kind::kSlotRestoreFailed,
                  model, f.detail, f.code};
    e.slot_file = f;
    emit_event(config_, e);
  }
}

}  // namespace lemon
