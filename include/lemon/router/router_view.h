// RouterView: what the router holds, published for readers that must not
// take the router's lock (/metrics, the dashboard's context monitor; issue
// #12 §2: "a scrape takes no lock that requests need").
//
// The router publishes a new view whenever its table, its load queue or the
// set of waiting requests changes (never on the fast path of a request that
// gets a free slot at once). Per-request counters (in flight, last use) are
// read live from the slot's atomics, so they are exact at read time.
//
// Thread-safety: a view is immutable once published; share it freely.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lemon/router/loaded_server_info.h"
#include "lemon/router/slot_limits.h"

#include "lemon/backends/wrapped_server.h"

namespace lemon {

struct ServerSlot;

struct ServerView {
  LoadedServerInfo info;  // as of publication
  std::shared_ptr<const ServerSlot> slot;

  int in_flight() const;
  std::int64_t last_use_ms() const;
  WrappedServer& server() const;
};

struct RouterView {
  std::vector<ServerView> servers;
  // Requests waiting for a load or a free slot, per model and in all.
  std::map<std::string, int, std::less<>> waiting;
  int waiting_total = 0;
  // Models whose load is running (first, if any) or queued, in order.
  std::vector<std::string> loading;
  std::int64_t published_ms = 0;  // Unix ms when this view was published
  std::vector<DeviceMemoryInfo> devices;
  SlotLimits limits;  // in force when published
};

}  // namespace lemon
