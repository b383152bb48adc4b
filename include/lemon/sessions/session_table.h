// SessionTable: multi-turn sessions that keep their context in one llama.cpp
// slot. The session table keeps each session's history;
// every turn goes to the same server and the same slot (`id_slot`,
// `cache_prompt`), so llama-server evaluates only the tokens added since the
// last turn. When its server goes, Router::acquire_server answers
// kSessionLost and the caller moves it (move_to_free_slot) to a server of
// its model loaded again.
//
// A server of `parallel` slots takes at most that many sessions; a session
// created when every slot of the model is pinned waits in its model's FIFO
// line until a session ends (or its deadline passes: kQueueFull). Each model
// has its own line: a creator waits only behind earlier creators of the same
// model, never behind one for a model that is full. Sessions idle for the
// TTL end on the table's own reaper thread, which calls `on_end`.
//
// With a SessionLog (session_journal.h), every change is journaled before
// the call that made it returns, and the sessions of an earlier run are
// read back lazily, the first time one is asked for (or listed). A session
// read back has no server (its pin's server_id is 0) until its next turn
// moves it. Changes of one session are written in order: a change waits for
// that session's previous record to be written (never for another
// session's).
//
// It knows nothing of the router: its caller (api/lemonade's SessionApi)
// passes in what the Router says (`servers`, `reserve`).
//
// Lock order: the session table's lock, then the Router's (create() calls
// `servers` and `reserve`, which ask the Router, under the session table's
// lock); the Router never calls the session table.
//
// Thread-safety: every method may be called from any thread; callbacks run
// without the table's lock. choose_pin() is a pure function.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"

namespace lemon {

// Where a session lives: a server (LoadedServerInfo::server_id) and one of
// its llama.cpp slots.
struct SessionPin {
  std::uint64_t server_id = 0;
  int backend_slot = 0;
  bool operator==(const SessionPin&) const = default;
};

// A model's server as choose_pin() sees it: its id and its slot count.
struct PinnableServer {
  std::uint64_t server_id = 0;
  int slots = 1;
};

// The pin for a new session: on the server with the fewest sessions, its
// lowest slot that no session holds; nullopt when every slot is taken.
std::optional<SessionPin> choose_pin(const std::vector<PinnableServer>& servers,
                                     const std::vector<SessionPin>& taken);

// What a session is, as GET sessions/{id} shows it.
struct SessionState {
  std::string id;
  std::string model;
  std::string system;  // "" for none
  std::string owner;   // the name of the API key that created it; "" without keys
  nlohmann::json options = nlohmann::json::object();  // sampling fields for each turn
  nlohmann::json history = nlohmann::json::array();   // {"role","content"} in order
  SessionPin pin;
  bool generating = false;
  int turns = 0;                       // generations completed
  std::int64_t prompt_tokens = 0;      // the last turn's prompt, cached part included
  std::int64_t cached_tokens = 0;      // of those, reused from the slot's cache
  std::int64_t completion_tokens = 0;  // all turns together
  std::int64_t created_ms = 0;         // Unix ms
  std::int64_t last_used_ms = 0;
  // Its server went (evicted, unloaded, scaled down, crashed) and it moved
  // to another: how many times, and how its last move's
  // first turn found its context, "restored" (a saved slot: the turn reused
  // cached tokens) or "recomputed" ("" before any move).
  int moves = 0;
  std::string resumed;
};

// A turn's outcome: the assistant's reply and the backend's token figures.
struct TurnResult {
  std::string reply;
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::int64_t completion_tokens = 0;
};

class SessionLog;

class SessionTable {
 public:
  using Clock = std::chrono::steady_clock;
  // Called when a session ends by TTL, with its last state (to erase its
  // slot on the backend).
  using EndCallback = std::function<void(const SessionState&)>;

  // `log` (may be null) journals the sessions; those it holds are read
  // back lazily.
  SessionTable(std::chrono::milliseconds ttl, EndCallback on_expired,
               std::shared_ptr<SessionLog> log = nullptr);
  ~SessionTable();  // stops the reaper; sessions are dropped without callbacks
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;

  // Creates a session on a free slot of `servers()` (called again whenever
  // the line moves, as servers come and go). Waits in `model`'s FIFO line
  // while every slot is taken, until `deadline` (kQueueFull) or
  // `cancelled()` (kCancelled). `reserve(pin)`, when given, claims the slot
  // on its server before the session exists (Router::pin_backend_slot); if
  // it fails (the server went or is draining), the creator looks again.
  Result<SessionState> create(const std::string& model, const std::string& system,
                              nlohmann::json options,
                              const std::function<std::vector<PinnableServer>()>& servers,
                              Clock::time_point deadline,
                              const std::function<bool()>& cancelled = {},
                              const std::function<bool(const SessionPin&)>& reserve = {},
                              const std::string& owner = {});

  Result<SessionState> get(const std::string& id);
  std::vector<SessionState> list();

  // Appends one message. kSessionNotFound; kSessionBusy while generating.
  Result<SessionState> append(const std::string& id, const nlohmann::json& message);

  // Starts a turn: marks the session generating and returns its state and
  // the flag cancel() sets. kSessionNotFound; kSessionBusy if one runs.
  struct Turn {
    SessionState state;
    std::shared_ptr<std::atomic<bool>> cancel;
  };
  Result<Turn> begin_turn(const std::string& id);
  // Ends the turn begun last: with a result, the reply joins the history;
  // without (failed or cancelled), the history stays as it was.
  void end_turn(const std::string& id, const std::optional<TurnResult>& result);

  // Moves the session `id`, whose server is gone, to a free slot of
  // `servers()`: the slot number it had when a server has it
  // free (where its saved slot was restored), else choose_pin's. `reserve`
  // claims it as create() does. kQueueFull when every slot is taken.
  Result<SessionPin> move_to_free_slot(const std::string& id,
                                       const std::function<std::vector<PinnableServer>()>& servers,
                                       const std::function<bool(const SessionPin&)>& reserve);
  // Records how a moved session's first turn found its context.
  void note_resumed(const std::string& id, bool restored);

  // Stops the running turn, if any. kSessionNotFound; true if one ran.
  Result<bool> cancel(const std::string& id);
  // Ends a session (cancelling its turn) and returns its last state.
  Result<SessionState> remove(const std::string& id);

 private:
  struct Entry {
    SessionState state;
    std::shared_ptr<std::atomic<bool>> cancel;
    Clock::time_point idle_since;
    bool recording = false;    // a record of it is being written (mu_ not held)
    bool unjournaled = false;  // a record failed: its journal was deleted, none is written
  };
  void reap_loop();

  // Reads `id` back from the log if it is one of an earlier run's sessions
  // not read yet (the file is read with mu_ released).
  void read_back_locked(MutexLock& lock, const std::string& id) LEMON_REQUIRES(mu_);
  // The session, read back if need be and with no record of it being
  // written (waits for that): else kSessionNotFound.
  Result<Entry*> settled_entry_locked(MutexLock& lock, const std::string& id) LEMON_REQUIRES(mu_);
  // Writes `record` to the log with mu_ released; the entry stays (remove
  // and the reaper wait for it). Returns with mu_ held again.
  void record_locked(MutexLock& lock, const std::string& id, const nlohmann::json& record,
                     bool create = false) LEMON_REQUIRES(mu_);
  // The session if it exists and runs no turn: else kSessionNotFound or
  // kSessionBusy.
  Result<Entry*> idle_entry_locked(MutexLock& lock, const std::string& id) LEMON_REQUIRES(mu_);
  std::vector<SessionPin> taken_locked() const LEMON_REQUIRES(mu_);
  // choose_pin, but a slot number that a session of `model` not on any of
  // `servers` had (it comes back there, maybe to its restored slot) only
  // when no other slot is free.
  std::optional<SessionPin> choose_pin_sparing_restored(const std::string& model,
                                                        const std::vector<PinnableServer>& servers,
                                                        const std::vector<SessionPin>& taken) const
      LEMON_REQUIRES(mu_);
  std::string id_model(const std::string& id) const LEMON_REQUIRES(mu_);

  const std::chrono::milliseconds ttl_;
  const EndCallback on_expired_;
  const std::shared_ptr<SessionLog> log_;
  mutable Mutex mu_;
  CondVar cv_;  // the line moved or a session ended
  CondVar reaper_cv_;
  CondVar recorded_cv_;  // a record was written or a session read back
  std::map<std::string, Entry> sessions_ LEMON_GUARDED_BY(mu_);
  // An earlier run's sessions not read back yet, with when each went idle;
  // and those being read now.
  std::map<std::string, Clock::time_point> unread_ LEMON_GUARDED_BY(mu_);
  std::set<std::string> reading_ LEMON_GUARDED_BY(mu_);
  // Per model, the tickets of creators waiting for a slot, in order.
  std::map<std::string, std::deque<std::uint64_t>, std::less<>> lines_ LEMON_GUARDED_BY(mu_);
  std::uint64_t next_ticket_ LEMON_GUARDED_BY(mu_) = 1;
  bool stopping_ LEMON_GUARDED_BY(mu_) = false;
  std::thread reaper_;
};

}  // namespace lemon
