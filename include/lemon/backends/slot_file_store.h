// SlotFileStore: SlotStore over llama-server's own slot actions (POST
// /slots/{id}?action=save|restore, into the folder its --slot-save-path
// names) and the files they write.
//
// Every call is bounded by `timeout` in all (GET /slots and each action get
// what is left); a stop never waits past it. A save that fails leaves no
// file; a file that llama-server refuses to restore is deleted. The budget
// deletes the least recently saved or restored files first.
//
// Thread-safety: as SlotStore; the budget's sweep is serialized.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "lemon/backends/slot_store.h"
#include "lemon/core/mutex.h"

namespace lemon {

struct SlotFileStoreSettings {
  std::filesystem::path root;                // <cache dir>/slot_cache
  long long min_tokens = 1024;               // --slot-save-min-tokens
  std::chrono::milliseconds timeout{10000};  // --slot-save-timeout
  std::uint64_t budget_bytes = 0;            // --slot-cache-size
};

class SlotFileStore final : public SlotStore {
 public:
  explicit SlotFileStore(SlotFileStoreSettings settings);

  std::vector<int> saved_slots(WrappedServer& server, int replica) override;
  std::vector<SlotFileEvent> restore_into(WrappedServer& server, int replica,
                                          const std::vector<int>& slots) override;
  std::vector<SlotFileEvent> save_from(WrappedServer& server, int replica,
                                       const std::vector<int>& session_slots) override;
  void forget(const std::string& model) override;
  long long saved_bytes(const std::string& model) const override;

 private:
  void keep_within_budget();
  // saved_bytes' figures are kept until a save, restore, forget or sweep
  // changes the files (so /health never walks a folder twice).
  void forget_sizes(const std::string& model);

  const SlotFileStoreSettings settings_;
  Mutex sweep_mu_;
  mutable Mutex sizes_mu_;
  mutable std::map<std::string, long long, std::less<>> sizes_ LEMON_GUARDED_BY(sizes_mu_);
  std::uint64_t sizes_generation_ LEMON_GUARDED_BY(sizes_mu_) = 0;
};

}  // namespace lemon
