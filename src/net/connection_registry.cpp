#include "connection_registry.h"

#include <sys/socket.h>

#include <algorithm>
#include "lemon/core/mutex.h"

namespace lemon::net::detail {

namespace {

// The idle connection with the oldest idle_since (ties: the lower id), of
// `address` only when it is non-null.
const OpenConnection* oldest_idle(const std::vector<OpenConnection>& open,
                                  const std::string* address) {
  const OpenConnection* oldest = nullptr;
  for (const auto& c : open) {
    if (c.busy || (address != nullptr && c.address != *address)) {
      continue;
    }
    if (oldest == nullptr || c.idle_since < oldest->idle_since ||
        (c.idle_since == oldest->idle_since && c.id < oldest->id)) {
      oldest = &c;
    }
  }
  return oldest;
}

}  // namespace

AdmissionDecision choose_victim(const std::vector<OpenConnection>& open, const std::string& address,
                                const ConnectionLimits& limits) {
  int from_address = 0;
  for (const auto& c : open) {
    from_address += c.address == address ? 1 : 0;
  }
  if (from_address >= limits.per_address) {
    if (const auto* victim = oldest_idle(open, &address)) {
      return {Admission::kEvictThenAdmit, victim->id};
    }
    // Every one of them is working: the address limit bounds idle sockets,
    // not real work, so only the total can refuse.
  }
  if (static_cast<int>(open.size()) < limits.total) {
    return {Admission::kAdmit, 0};
  }
  if (const auto* victim = oldest_idle(open, nullptr)) {
    return {Admission::kEvictThenAdmit, victim->id};
  }
  return {Admission::kRefuse, 0};
}

std::optional<std::uint64_t> ConnectionRegistry::admit(int fd, const std::string& address) {
  MutexLock lock(mu_);
  std::vector<OpenConnection> open;
  open.reserve(entries_.size());
  for (const auto& [id, entry] : entries_) {
    open.push_back(entry.state);
  }
  auto decision = choose_victim(open, address, limits_);
  if (decision.what == Admission::kRefuse) {
    return std::nullopt;
  }
  if (decision.what == Admission::kEvictThenAdmit) {
    auto it = entries_.find(decision.victim);
    // Its thread sees the end of input, closes it and leaves; one still
    // writing its last bytes shuts it down once they are out.
    if (!it->second.ending) {
      ::shutdown(it->second.fd, SHUT_RDWR);
    }
    entries_.erase(it);
  }
  const std::uint64_t id = next_id_++;
  Entry entry;
  entry.fd = fd;
  entry.state = OpenConnection{id, address, false, std::chrono::steady_clock::now()};
  entries_.emplace(id, std::move(entry));
  return id;
}

bool ConnectionRegistry::mark_busy(std::uint64_t id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return false;  // evicted
  }
  it->second.state.busy = true;
  return true;
}

void ConnectionRegistry::response_ending(std::uint64_t id) {
  MutexLock lock(mu_);
  if (auto it = entries_.find(id); it != entries_.end()) {
    it->second.state.busy = false;
    it->second.state.idle_since = std::chrono::steady_clock::now();
    it->second.ending = true;
  }
}

bool ConnectionRegistry::response_ended(std::uint64_t id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return false;  // evicted while it wrote
  }
  it->second.ending = false;
  return true;
}

bool ConnectionRegistry::mark_idle(std::uint64_t id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return false;  // evicted
  }
  it->second.state.busy = false;
  it->second.state.idle_since = std::chrono::steady_clock::now();
  return true;
}

bool ConnectionRegistry::is_open(std::uint64_t id) const {
  MutexLock lock(mu_);
  return entries_.count(id) != 0;
}

void ConnectionRegistry::leave(std::uint64_t id) {
  MutexLock lock(mu_);
  entries_.erase(id);
}

int ConnectionRegistry::open() const {
  MutexLock lock(mu_);
  return static_cast<int>(entries_.size());
}

}  // namespace lemon::net::detail
