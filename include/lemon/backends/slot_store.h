// SlotStore: llama.cpp slots kept across a server's stop and its next start.
// The router calls it around a server's life; SlotFileStore
// (slot_file_store.h) is the real one, tests may fake it.
//
// Thread-safety: every method may be called from any thread, for different
// servers at once; a call blocks for at most the store's timeout.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lemon/backends/wrapped_server.h"
#include "lemon/core/error.h"

namespace lemon {

// What happened to one slot's file.
struct SlotFileEvent {
  enum class Kind { kSaved, kRestored, kRestoreFailed };
  Kind kind = Kind::kSaved;
  int slot = 0;
  long long tokens = 0;
  long long bytes = 0;
  double seconds = 0.0;
  std::optional<ErrorCode> code;  // kRestoreFailed: why
  std::string detail;             // kRestoreFailed: what llama-server said
};

class SlotStore {
 public:
  virtual ~SlotStore() = default;
  // The slots of a started `server`, replica `replica` of its model, that
  // restore_into would restore (a file saved by an earlier server of the
  // same identity and replica, for a slot it has). Reads only the folder.
  virtual std::vector<int> saved_slots(WrappedServer& server, int replica) = 0;
  // After `server` started, while the router keeps requests off `slots`
  // (what saved_slots listed): restores those, and deletes the files of
  // other identities of its model. A file that is refused is deleted (the
  // turn is then computed afresh). No-op for a server without
  // slot_save_dir().
  virtual std::vector<SlotFileEvent> restore_into(WrappedServer& server, int replica,
                                                  const std::vector<int>& slots) = 0;
  // Before a planned stop of a drained `server`: saves the slots worth
  // keeping (slots_to_save; `session_slots` are those sessions hold), then
  // keeps the cache within its budget. Skipped when the disk is short.
  virtual std::vector<SlotFileEvent> save_from(WrappedServer& server, int replica,
                                               const std::vector<int>& session_slots) = 0;
  // Deletes every saved slot of `model` (POST /delete).
  virtual void forget(const std::string& model) = 0;
  // Bytes of saved slots `model` has now (0: none).
  virtual long long saved_bytes(const std::string& model) const = 0;
};

const char* slot_file_event_name(SlotFileEvent::Kind kind);

}  // namespace lemon
