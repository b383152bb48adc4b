// Saved llama.cpp slots: where their files live and which to
// keep, as pure functions. The effects (HTTP to llama-server, the disk) are
// SlotFileStore's (slot_file_store.h).
//
// Layout: <slot cache>/<model folder>/<identity>/slot-<N>.bin, and
// replica-<R>-slot-<N>.bin for a model's replica R >= 1 (so replicas never
// overwrite each other's slots). The model
// folder is the model's name made safe for a path plus a hash of the name;
// the identity is a hash of what the cache depends on (llamacpp_server.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lemon {

// The model's folder name under the slot cache.
std::string slot_model_folder(std::string_view model);
// The identity folder's name: a hash (16 hex digits) of `description`.
std::string slot_identity_hash(std::string_view description);
// A saved slot's file: which replica of the model saved it, and its slot.
struct SlotFileKey {
  int replica = 0;
  int slot = 0;
  bool operator==(const SlotFileKey&) const = default;
};
// Its file name, and back (nullopt for any other name).
std::string slot_file_name(SlotFileKey key);
std::optional<SlotFileKey> slot_of_file(std::string_view name);

// One slot as llama-server's GET /slots shows it: `tokens` is the prompt its
// cache holds (n_prompt_tokens of its last task; 0 before any task).
struct SlotUse {
  int id = 0;
  bool busy = false;
  long long tokens = 0;
};
std::vector<SlotUse> parse_slot_uses(const nlohmann::json& slots);

// Which slots a planned stop saves: those a session holds (with anything in
// them) and any other holding at least `min_tokens`; never a busy one (its
// save would wait for it), never an empty one. In slot order.
std::vector<int> slots_to_save(const std::vector<SlotUse>& slots,
                               const std::vector<int>& session_slots, long long min_tokens);

// One saved file, as the budget sees it.
struct CachedSlotFile {
  std::string path;
  std::uint64_t bytes = 0;
  std::int64_t used_ns = 0;  // last saved or restored (its mtime)
};
// The files to delete, least recently used first, so that the rest fit in
// `budget` bytes.
std::vector<std::string> files_over_budget(std::vector<CachedSlotFile> files, std::uint64_t budget);

// --slot-cache-size's default: a tenth of the cache filesystem's free
// space, at most 32 GiB.
std::uint64_t default_slot_cache_budget(std::uint64_t free_bytes);

}  // namespace lemon
