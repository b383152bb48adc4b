#include "server_slot.h"

#include "lemon/core/clock.h"

namespace lemon {

void ServerSlot::touch(std::uint64_t tick) {
  lru_tick = tick;
  last_use_ms.store(unix_ms_now(), std::memory_order_relaxed);
}

void ServerSlot::size_backend_slots() {
  if (pinned_slots.empty()) {
    pinned_slots.assign(static_cast<std::size_t>(capacity), false);
    busy_slots.assign(static_cast<std::size_t>(capacity), false);
  }
}

bool ServerSlot::pin_backend_slot(int k) {
  if (capacity <= 0 || k < 0 || k >= capacity) {
    return false;
  }
  size_backend_slots();
  if (!pinned_slots[static_cast<std::size_t>(k)]) {
    pinned_slots[static_cast<std::size_t>(k)] = true;
    ++pinned;
  }
  return true;
}

bool ServerSlot::unpin_backend_slot(int k) {
  if (k < 0 || static_cast<std::size_t>(k) >= pinned_slots.size() ||
      !pinned_slots[static_cast<std::size_t>(k)]) {
    return false;
  }
  pinned_slots[static_cast<std::size_t>(k)] = false;
  --pinned;
  return true;
}

bool ServerSlot::hold_for_restore(int k) {
  if (k < 0 || k >= capacity) {
    return false;
  }
  size_backend_slots();
  busy_slots[static_cast<std::size_t>(k)] = true;
  restoring = true;
  ++in_flight;
  return true;
}

int ServerSlot::claim_request_slot() {
  if (pinned == 0 && !restoring) {
    return -1;
  }
  const int k = slot_for_request();
  set_backend_slot_busy(k, true);
  return k;
}

bool ServerSlot::backend_slot_free(int k) const {
  return k < 0 || static_cast<std::size_t>(k) >= busy_slots.size() ||
         !busy_slots[static_cast<std::size_t>(k)];
}

void ServerSlot::set_backend_slot_busy(int k, bool busy) {
  if (k >= 0 && static_cast<std::size_t>(k) < busy_slots.size()) {
    busy_slots[static_cast<std::size_t>(k)] = busy;
  }
}

std::vector<int> ServerSlot::session_slots() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < pinned_slots.size(); ++i) {
    if (pinned_slots[i]) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

}  // namespace lemon
