#include "lemon/router/session_table.h"
#include "lemon/core/mutex.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "lemon/core/clock.h"

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

SessionTable::SessionTable(std::chrono::milliseconds ttl, EndCallback on_expired)
    : ttl_(ttl), on_expired_(std::move(on_expired)), reaper_([this] { reap_loop(); }) {}

SessionTable::~SessionTable() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  reaper_cv_.notify_all();
  cv_.notify_all();
  reaper_.join();
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
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return Error(ErrorCode::kSessionNotFound, "no session '" + id + "'", "id");
  }
  const SessionPin old = it->second.state.pin;
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
    pin = choose_pin(now, taken);
  }
  if (!pin || (reserve && !reserve(*pin))) {
    return Error(ErrorCode::kQueueFull, "every slot of '" + it->second.state.model +
                                            "' holds a session; this one cannot move there now")
        .with_retry_after(1);
  }
  it->second.state.pin = *pin;
  ++it->second.state.moves;
  it->second.state.resumed.clear();
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
    const std::function<bool()>& cancelled, const std::function<bool(const SessionPin&)>& reserve) {
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
      auto pin = choose_pin(servers(), taken_locked());
      if (pin && (!reserve || reserve(*pin))) {
        leave();
        Entry e;
        e.state.id = new_session_id();
        e.state.model = model;
        e.state.system = system;
        e.state.options = std::move(options);
        e.state.pin = *pin;
        e.state.created_ms = unix_ms_now();
        e.state.last_used_ms = e.state.created_ms;
        e.cancel = std::make_shared<std::atomic<bool>>(false);
        e.idle_since = Clock::now();
        SessionState out = e.state;
        sessions_.emplace(out.id, std::move(e));
        reaper_cv_.notify_all();
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

Result<SessionState> SessionTable::get(const std::string& id) const {
  MutexLock lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return not_found(id);
  }
  return it->second.state;
}

std::vector<SessionState> SessionTable::list() const {
  MutexLock lock(mu_);
  std::vector<SessionState> out;
  for (const auto& [id, e] : sessions_) {
    out.push_back(e.state);
  }
  return out;
}

Result<SessionTable::Entry*> SessionTable::idle_entry_locked(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return not_found(id);
  }
  if (it->second.state.generating) {
    return busy(id);
  }
  return &it->second;
}

Result<SessionState> SessionTable::append(const std::string& id, nlohmann::json message) {
  MutexLock lock(mu_);
  auto entry = idle_entry_locked(id);
  if (!entry.ok()) {
    return std::move(entry).error();
  }
  Entry& e = **entry;
  e.state.history.push_back(std::move(message));
  e.state.last_used_ms = unix_ms_now();
  e.idle_since = Clock::now();
  return e.state;
}

Result<SessionTable::Turn> SessionTable::begin_turn(const std::string& id) {
  MutexLock lock(mu_);
  auto entry = idle_entry_locked(id);
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
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return;  // deleted meanwhile
  }
  Entry& e = it->second;
  e.state.generating = false;
  e.state.last_used_ms = unix_ms_now();
  e.idle_since = Clock::now();
  if (result) {
    e.state.history.push_back({{"role", "assistant"}, {"content", result->reply}});
    ++e.state.turns;
    e.state.prompt_tokens = result->prompt_tokens;
    e.state.cached_tokens = result->cached_tokens;
    e.state.completion_tokens += result->completion_tokens;
  }
  reaper_cv_.notify_all();
}

Result<bool> SessionTable::cancel(const std::string& id) {
  MutexLock lock(mu_);
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
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return not_found(id);
  }
  it->second.cancel->store(true);
  SessionState out = std::move(it->second.state);
  sessions_.erase(it);
  cv_.notify_all();  // its slot is free for whoever waits
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
      if (!e.state.generating && due <= now) {
        expired.push_back(e.state);
        it = sessions_.erase(it);
        continue;
      }
      if (!e.state.generating && (!next || due < *next)) {
        next = due;
      }
      ++it;
    }
    if (!expired.empty()) {
      cv_.notify_all();
      lock.unlock();
      for (const auto& s : expired) {
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
