// JobEffects: what LoadScheduler's steps do for real, for one load job on
// the loader thread: serve it from a loaded server, create the server, plan
// its victims (slot limits, memory), stop them and start and publish it,
// evict for memory, evict everything, start again. Also a scale-up's run
// (run_replica). Decisions are made over a TableSnapshot, acted on through
// the ServerTable, the Retirer and the LoadQueue; no lock is held across a
// step, and JobEffects holds none of its own.
#pragma once

#include <memory>
#include <optional>

#include "lemon/router/load_scheduler.h"
#include "load_queue.h"
#include "retirer.h"

namespace lemon {

class JobEffects final : public LoadEffects {
 public:
  JobEffects(const LoaderParts& parts, LoadQueue& queue, LoadJob& job)
      : parts_(parts), queue_(queue), job_(job) {}

  bool serve_loaded() override;
  Status create_server() override;
  Status admit_and_start() override;
  bool evict_idle_for_memory() override;
  bool evict_all(EvictAllReason reason, const Error& failure) override;
  Status start_again() override;
  Error out_of_memory_everywhere(const Error& last) override;
  bool shutting_down() const override;
  bool failed_after_evict_all() const override;

  // A scale-up: one more replica of a loaded model with its options,
  // admitted against memory but evicting nothing.
  Status run_replica();

 private:
  // What admission charges `server` of `estimate`: its configuration's
  // remembered footprint with a margin, else the estimate.
  DeviceBytes charge_of(const WrappedServer& server, const DeviceBytes& estimate) const;
  // A prepared server with `options` and, when its context is fitted to
  // memory, the context `fit` chose.
  Result<std::shared_ptr<WrappedServer>> make_server(const RecipeOptions& options,
                                                     const std::optional<FittedContext>& fit) const;
  // Chooses the context of a server whose ctx_size asks for one fitted to
  // memory (context_fit.h), beside the servers that stay (all but
  // `victims`), and prepares the server again with it.
  Status fit_context_to_memory(const TableSnapshot& table,
                               const std::vector<DeviceReading>& readings, const BudgetRule& rule,
                               const std::vector<std::shared_ptr<ServerSlot>>& victims);
  // Starts `server` and publishes it with the job's waiters' leases;
  // restores its saved slots; `origin` says what its record carries.
  Status start_and_publish(const std::shared_ptr<WrappedServer>& server, const SlotOrigin& origin);
  // The record of a server this job starts (not a replica's).
  SlotOrigin origin_of(const WrappedServer& server) const;

  const LoaderParts& parts_;
  LoadQueue& queue_;
  LoadJob& job_;
  std::shared_ptr<WrappedServer> server_;
};

}  // namespace lemon
