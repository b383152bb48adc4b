#include "lemon/sessions/session_table.h"
#include "lemon/core/mutex.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "lemon/core/clock.h"
#include "lemon/core/log.h"
#include "lemon/sessions/session_journal.h"

namespace lemon {
namespace {

// "sess_" and 32 hex digits from the system's random source.
std::string new_session_id() {
  static Mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  MutexLock lock(mu);
  char text[40];
  std::snprintf(text, sizeof text, "sess_%016llx%016llx", static_cast<unsigned long long>(gen()),
                static_cast<unsigned long long>(gen()));
  return text;
}

Error not_found(const std::string& id) {
  return Error(ErrorCode::kSessionNotFound,
               "no session '" + id + "' (it never existed, was deleted, or expired)", "id");
}

Error busy(const std::string& id) {
  return Error(ErrorCode::kSessionBusy,
               "session '" + id + "' is generating; wait for it to end or cancel it");
}

}  // namespace

std::optional<SessionPin> choose_pin(const std::vector<PinnableServer>& servers,
                                     const std::vector<SessionPin>& taken) {
  std::optional<SessionPin> best;
  std::size_t best_load = 0;
  for (const auto& s : servers) {
    std::vector<bool> used(static_cast<std::size_t>(std::max(s.slots, 1)), false);
    std::size_t load = 0;
    for (const auto& t : taken) {
      if (t.server_id == s.server_id) {
        ++load;
        if (t.backend_slot >= 0 && static_cast<std::size_t>(t.backend_slot) < used.size()) {
          used[static_cast<std::size_t>(t.backend_slot)] = true;
        }
      }
    }
    auto free = std::find(used.begin(), used.end(), false);
    if (free == used.end()) {
      continue;
    }
    if (!best || load < best_load) {
      best = SessionPin{s.server_id, static_cast<int>(free - used.begin())};
      best_load = load;
    }
  }
  return best;
}

SessionTable::SessionTable(std::chrono::milliseconds ttl, EndCallback on_expired,
                           std::shared_ptr<SessionLog> log)
    : ttl_(ttl), on_expired_(std::move(on_expired)), log_(std::move(log)) {
  if (log_) {
    // An earlier run's sessions, read back when first asked for; each keeps
    // the idle time it had.
    const std::int64_t now_ms = unix_ms_now();
    const auto now = Clock::now();
    MutexLock lock(mu_);
    for (const auto& j : log_->list(ttl_)) {
      unread_[j.id] =
          now - std::chrono::milliseconds(std::max<std::int64_t>(0, now_ms - j.last_used_ms));
    }
  }
  reaper_ = std::thread([this] { reap_loop(); });
}

void SessionTable::read_back_locked(MutexLock& lock, const std::string& id) {
  recorded_cv_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return reading_.count(id) == 0; });
  auto unread = unread_.find(id);
  if (unread == unread_.end()) {
    return;
  }
  const Clock::time_point idle_since = unread->second;
  unread_.erase(unread);
  if (sessions_.count(id) != 0) {
    return;  // a new session of the same id (never, with 128 random bits)
  }
  reading_.insert(id);
  std::optional<SessionState> state;
  // The file is read without the lock; nothing between unlock and lock
  // throws, so the lock is always taken again.
  mu_.unlock();
  try {
    state = log_->load(id);
  } catch (const std::exception& e) {
    logger("router")->error("session {}: its journal could not be read: {}", id, e.what());
  }
  mu_.lock();
  reading_.erase(id);
  if (state) {
    Entry e;
    e.state = std::move(*state);
    e.cancel = std::make_shared<std::atomic<bool>>(false);
    e.idle_since = idle_since;
    sessions_.emplace(id, std::move(e));
    reaper_cv_.notify_all();
  }
  recorded_cv_.notify_all();
}

Result<SessionTable::Entry*> SessionTable::settled_entry_locked(MutexLock& lock,
                                                                const std::string& id) {
  read_back_locked(lock, id);
  for (;;) {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) {
      return not_found(id);
    }
    if (!it->second.recording) {
      return &it->second;
    }
    recorded_cv_.wait(lock);
  }
}

void SessionTable::record_locked(MutexLock& lock, const std::string& id,
                                 const nlohmann::json& record, bool create) {
  (void)lock;
  if (!log_) {
    return;
  }
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.unjournaled) {
    return;
  }
  it->second.recording = true;
  bool written = false;
  // Written without the lock; nothing between unlock and lock throws.
  mu_.unlock();
  try {
    written = log_->append(id, record, create);
  } catch (const std::exception& e) {
    logger("router")->error("session {}: journal record not written: {}", id, e.what());
  }
  if (!written && !create) {
    // A journal that missed a record would replay another history: none
    // rather than a wrong one. The session goes on in memory.
    try {
      log_->erase(id);
    } catch (const std::exception&) {
      // erase() reports nothing; a file left here is read back as it was
    }
  }
  mu_.lock();
  // remove() and the reaper wait while `recording`: the entry is still here.
  Entry& e = sessions_.at(id);
  e.recording = false;
  if (!written) {
    e.unjournaled = true;
    logger("router")->warn("session {}: no longer journaled; it will not outlive the router", id);
  }
  recorded_cv_.notify_all();
  reaper_cv_.notify_all();  // the reaper skips an entry while it records
}

SessionTable::~SessionTable() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  reaper_cv_.notify_all();
  cv_.notify_all();
  reaper_.join();
}

std::string SessionTable::id_model(const std::string& id) const {
  auto it = sessions_.find(id);
  return it != sessions_.end() ? it->second.state.model : std::string();
}

std::optional<SessionPin> SessionTable::choose_pin_sparing_restored(
    const std::string& model, const std::vector<PinnableServer>& servers,
    const std::vector<SessionPin>& taken) const {
  // Sessions of `model` not on any of its servers now (their server went,
  // or the router restarted) come back to their slot number, where a saved
  // slot of theirs may be restored: a slot number one of them had is taken
  // last.
  std::vector<SessionPin> spared = taken;
  for (const auto& [sid, e] : sessions_) {
    const SessionPin& p = e.state.pin;
    const bool on_a_server = std::any_of(servers.begin(), servers.end(),
                                         [&](const auto& s) { return s.server_id == p.server_id; });
    if (e.state.model == model && !on_a_server) {
      for (const auto& s : servers) {
        spared.push_back({s.server_id, p.backend_slot});
      }
    }
  }
  if (auto pin = choose_pin(servers, spared)) {
    return pin;
  }
  return choose_pin(servers, taken);
}

std::vector<SessionPin> SessionTable::taken_locked() const {
  std::vector<SessionPin> out;
  out.reserve(sessions_.size());
  for (const auto& [id, e] : sessions_) {
    out.push_back(e.state.pin);
  }
  return out;
}

Result<SessionPin> SessionTable::move_to_free_slot(
    const std::string& id, const std::function<std::vector<PinnableServer>()>& servers,
    const std::function<bool(const SessionPin&)>& reserve) {
  MutexLock lock(mu_);
  auto entry = settled_entry_locked(lock, id);
  if (!entry.ok()) {
    return std::move(entry).error();
  }
  Entry* e = *entry;
  const SessionPin old = e->state.pin;
  std::vector<SessionPin> taken;
  for (const auto& p : taken_locked()) {
    if (!(p == old)) {
      taken.push_back(p);
    }
  }
  const std::vector<PinnableServer> now = servers();
  std::optional<SessionPin> pin;
  for (const auto& s : now) {
    const SessionPin same{s.server_id, old.backend_slot};
    if (old.backend_slot < s.slots && std::find(taken.begin(), taken.end(), same) == taken.end()) {
      pin = same;
      break;
    }
  }
  if (!pin) {
    pin = choose_pin_sparing_restored(id_model(id), now, taken);
  }
  if (!pin || (reserve && !reserve(*pin))) {
    return Error(ErrorCode::kQueueFull, "every slot of '" + e->state.model +
                                            "' holds a session; this one cannot move there now")
        .with_retry_after(1);
  }
  e->state.pin = *pin;
  ++e->state.moves;
  e->state.resumed.clear();
  record_locked(lock, id, session_moved_record(pin->backend_slot, unix_ms_now()));
  return *pin;
}

void SessionTable::note_resumed(const std::string& id, bool restored) {
  MutexLock lock(mu_);
  if (auto it = sessions_.find(id); it != sessions_.end()) {
    it->second.state.resumed = restored ? "restored" : "recomputed";
  }
}

Result<SessionState> SessionTable::create(
    const std::string& model, const std::string& system, nlohmann::json options,
    const std::function<std::vector<PinnableServer>()>& servers, Clock::time_point deadline,
    const std::function<bool()>& cancelled, const std::function<bool(const SessionPin&)>& reserve,
    const std::string& owner) {
  MutexLock lock(mu_);
  const std::uint64_t ticket = next_ticket_++;
  lines_[model].push_back(ticket);
  auto leave = [&]() LEMON_REQUIRES(mu_) {
    auto line = lines_.find(model);
    line->second.erase(std::find(line->second.begin(), line->second.end(), ticket));
    if (line->second.empty()) {
      lines_.erase(line);
    }
    cv_.notify_all();  // the next in this model's line may go now
  };
  for (;;) {
    if (stopping_) {
      leave();
      return Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down");
    }
    if (lines_.at(model).front() == ticket) {
      // servers() and reserve() ask the router (its own lock, never ours in
      // return).
      auto pin = choose_pin_sparing_restored(model, servers(), taken_locked());
      if (pin && (!reserve || reserve(*pin))) {
        leave();
        Entry e;
        e.state.id = new_session_id();
        e.state.model = model;
        e.state.system = system;
        e.state.owner = owner;
        e.state.options = std::move(options);
        e.state.pin = *pin;
        e.state.created_ms = unix_ms_now();
        e.state.last_used_ms = e.state.created_ms;
        e.cancel = std::make_shared<std::atomic<bool>>(false);
        e.idle_since = Clock::now();
        SessionState out = e.state;
        sessions_.emplace(out.id, std::move(e));
        reaper_cv_.notify_all();
        // Durable before anyone learns its id.
        record_locked(lock, out.id, session_created_record(out), true);
        return out;
      }
      // No free slot, or the chosen server began to drain after servers()
      // listed it: wait below and look again.
    }
    if (Clock::now() >= deadline) {
      leave();
      return Error(ErrorCode::kQueueFull,
                   "every slot of '" + model +
                       "' holds a session; end one (DELETE sessions/{id}) or raise parallel")
          .with_retry_after(1);
    }
    if (cancelled && cancelled()) {
      leave();
      return Error(ErrorCode::kCancelled, "client went away while waiting for a session slot");
    }
    // Woken when a session ends; servers may also appear (a replica), so
    // look again at least every 250 ms.
    cv_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(250)));
  }
}

Result<SessionState> SessionTable::get(const std::string& id) {
  MutexLock lock(mu_);
  read_back_locked(lock, id);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return not_found(id);
  }
  return it->second.state;
}

std::vector<SessionState> SessionTable::list() {
  MutexLock lock(mu_);
  while (!unread_.empty()) {
    const std::string id = unread_.begin()->first;
    read_back_locked(lock, id);
  }
  // And those another caller is reading back now.
  recorded_cv_.wait(lock, [&]() LEMON_REQUIRES(mu_) { return reading_.empty(); });
  std::vector<SessionState> out;
  for (const auto& [id, e] : sessions_) {
    out.push_back(e.state);
  }
  return out;
}

Result<SessionTable::Entry*> SessionTable::idle_entry_locked(MutexLock& lock,
                                                             const std::string& id) {
  auto entry = settled_entry_locked(lock, id);
  if (entry.ok() && (*entry)->state.generating) {
    return busy(id);
  }
  return entry;
}

Result<SessionState> SessionTable::append(const std::string& id, const nlohmann::json& message) {
  MutexLock lock(mu_);
  auto entry = idle_entry_locked(lock, id);
  if (!entry.ok()) {
    return std::move(entry).error();
  }
  Entry& e = **entry;
  e.state.history.push_back(message);
  e.state.last_used_ms = unix_ms_now();
  e.idle_since = Clock::now();
  SessionState out = e.state;
  record_locked(lock, id, session_message_record(message, out.last_used_ms));
  return out;
}

Result<SessionTable::Turn> SessionTable::begin_turn(const std::string& id) {
  MutexLock lock(mu_);
  auto entry = idle_entry_locked(lock, id);
  if (!entry.ok()) {
    return std::move(entry).error();
  }
  Entry& e = **entry;
  e.state.generating = true;
  e.cancel->store(false);
  e.state.last_used_ms = unix_ms_now();
  return Turn{e.state, e.cancel};
}

void SessionTable::end_turn(const std::string& id, const std::optional<TurnResult>& result) {
  MutexLock lock(mu_);
  auto entry = settled_entry_locked(lock, id);
  if (!entry.ok()) {
    return;  // deleted meanwhile
  }
  Entry& e = **entry;
  if (!e.state.generating) {
    return;  // ended already
  }
  e.state.generating = false;
  e.state.last_used_ms = unix_ms_now();
  e.idle_since = Clock::now();
  if (result) {
    e.state.history.push_back({{"role", "assistant"}, {"content", result->reply}});
    ++e.state.turns;
    e.state.prompt_tokens = result->prompt_tokens;
    e.state.cached_tokens = result->cached_tokens;
    e.state.completion_tokens += result->completion_tokens;
    record_locked(lock, id, session_turn_record(*result, e.state.last_used_ms));
  }
  reaper_cv_.notify_all();
}

Result<bool> SessionTable::cancel(const std::string& id) {
  MutexLock lock(mu_);
  read_back_locked(lock, id);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return not_found(id);
  }
  if (!it->second.state.generating) {
    return false;
  }
  it->second.cancel->store(true);
  return true;
}

Result<SessionState> SessionTable::remove(const std::string& id) {
  MutexLock lock(mu_);
  read_back_locked(lock, id);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return not_found(id);
  }
  it->second.cancel->store(true);
  auto entry = settled_entry_locked(lock, id);  // its last record written
  if (!entry.ok()) {
    return std::move(entry).error();  // removed meanwhile
  }
  SessionState out = std::move((*entry)->state);
  sessions_.erase(id);
  cv_.notify_all();  // its slot is free for whoever waits
  if (log_) {
    lock.unlock();
    log_->erase(id);
  }
  return out;
}

void SessionTable::reap_loop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    std::optional<Clock::time_point> next;
    std::vector<SessionState> expired;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const Entry& e = it->second;
      const auto due = e.idle_since + ttl_;
      if (!e.state.generating && !e.recording && due <= now) {
        expired.push_back(e.state);
        it = sessions_.erase(it);
        continue;
      }
      if (!e.state.generating && !e.recording && (!next || due < *next)) {
        next = due;
      }
      ++it;
    }
    // An earlier run's sessions never asked for end by their TTL too.
    std::vector<std::string> unread_expired;
    for (auto it = unread_.begin(); it != unread_.end();) {
      const auto due = it->second + ttl_;
      if (due <= now) {
        unread_expired.push_back(it->first);
        it = unread_.erase(it);
        continue;
      }
      if (!next || due < *next) {
        next = due;
      }
      ++it;
    }
    if (!unread_expired.empty()) {
      lock.unlock();
      for (const auto& id : unread_expired) {
        log_->erase(id);
      }
      lock.lock();
      continue;
    }
    if (!expired.empty()) {
      cv_.notify_all();
      lock.unlock();
      for (const auto& s : expired) {
        if (log_) {
          log_->erase(s.id);
        }
        if (on_expired_) {
          on_expired_(s);
        }
      }
      lock.lock();
      continue;
    }
    if (next) {
      reaper_cv_.wait_until(lock, *next);
    } else {
      reaper_cv_.wait(lock);
    }
  }
}

}  // namespace lemon
