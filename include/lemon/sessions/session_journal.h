// Sessions kept across a router restart or crash. Each
// session has one journal file, `<dir>/<id>.jsonl`: one JSON record per
// line, appended with one write(2) and made durable (fdatasync) before the
// change is acknowledged, so every turn boundary is on disk.
//
//   {"k":"created","t":ms,"id","model","system","options","slot"}
//   {"k":"message","t":ms,"message":{"role","content"}}
//   {"k":"turn","t":ms,"reply","prompt_tokens","cached_tokens","completion_tokens"}
//   {"k":"moved","t":ms,"slot"}
//
// Reading (read_session_journal, pure): a record counts only when its line
// ends with '\n' and parses. A last line that does not is a write the crash
// tore: it is dropped and the file cut back to the records before it (a
// file with no whole record is a creation never acknowledged: deleted). Any
// other bad line (one that parses but is no record this journal writes
// included), or a first record that is not "created", makes the file
// malformed: it is moved aside to `<dir>/malformed/` (never overwritten) and
// reported; its session is not restored.
//
// SessionLog is what SessionTable calls; SessionJournal is the real one.
// Thread-safety: SessionJournal's methods may be called from any thread;
// the table never writes one session's records from two threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/sessions/session_table.h"

namespace lemon {

// The records, as SessionTable writes them (`t` is Unix ms).
nlohmann::json session_created_record(const SessionState& s);
nlohmann::json session_message_record(const nlohmann::json& message, std::int64_t t);
nlohmann::json session_turn_record(const TurnResult& r, std::int64_t t);
nlohmann::json session_moved_record(int slot, std::int64_t t);

// What a journal's text says.
struct JournalReading {
  std::optional<SessionState> state;  // nullopt when malformed
  std::string malformed;              // why, when malformed
  std::size_t good_bytes = 0;         // the length of the records that count
  bool torn = false;                  // a last record was cut (or garbled) and dropped
  // No whole record (an empty file, or a creation cut by a crash): a
  // session nobody was told of, deleted quietly.
  bool unacknowledged = false;
};

// The session a journal's text describes: its history, turns and token
// figures; its pin's server is 0 (no server yet) and its slot the last one
// recorded. last_used_ms is the last record's time.
JournalReading read_session_journal(std::string_view text);

// A journaled session not yet read back: its id and when it was last used.
struct JournaledSession {
  std::string id;
  std::int64_t last_used_ms = 0;
};

class SessionLog {
 public:
  virtual ~SessionLog() = default;
  // The sessions on disk; those idle longer than `ttl` are deleted instead.
  virtual std::vector<JournaledSession> list(std::chrono::milliseconds ttl) = 0;
  // Reads one back (repairing a torn end); nullopt if it is gone or
  // malformed (then moved aside and reported).
  virtual std::optional<SessionState> load(const std::string& id) = 0;
  // Appends a record, durably. `create` makes the file (and fails if it
  // exists); otherwise a missing file (the session was deleted) is left
  // missing. False when the disk refused: the session goes on in memory.
  virtual bool append(const std::string& id, const nlohmann::json& record, bool create) = 0;
  virtual void erase(const std::string& id) = 0;
};

class SessionJournal final : public SessionLog {
 public:
  // Told of a malformed journal: the session, why, and where it was moved.
  using MalformedReport = std::function<void(const std::string& id, const std::string& why,
                                             const std::filesystem::path& kept_as)>;
  explicit SessionJournal(std::filesystem::path dir, MalformedReport on_malformed = {});

  std::vector<JournaledSession> list(std::chrono::milliseconds ttl) override;
  std::optional<SessionState> load(const std::string& id) override;
  bool append(const std::string& id, const nlohmann::json& record, bool create) override;
  void erase(const std::string& id) override;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path path_of(const std::string& id) const;
  void keep_aside(const std::string& id, const std::string& why);

  const std::filesystem::path dir_;
  const MalformedReport on_malformed_;
};

// Whether `id` has the shape of a session id ("sess_" and 32 hex digits):
// only such files are journals.
bool is_session_id(std::string_view id);

}  // namespace lemon
