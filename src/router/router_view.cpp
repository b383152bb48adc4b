#include "lemon/router/router_view.h"

#include "server_slot.h"

namespace lemon {

int ServerView::in_flight() const {
  return slot->in_flight.load(std::memory_order_relaxed);
}

std::int64_t ServerView::last_use_ms() const {
  return slot->last_use_ms.load(std::memory_order_relaxed);
}

WrappedServer& ServerView::server() const {
  return *slot->server;
}

}  // namespace lemon
