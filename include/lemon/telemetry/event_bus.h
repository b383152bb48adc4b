// EventBus: what the router did, as JSON events for GET /api/v1/events and
// the dashboard: loads queued, started, succeeded or failed,
// evictions, drains, servers stopped or crashed, download progress, finished
// requests, context use. Each event has an id (SSE `id:`), a time and a type;
// the last 1,000 are kept so a client can resume with Last-Event-ID.
//
// Request events are built only while someone follows the bus
// (wants_request_events()), so a request costs nothing here otherwise.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/telemetry/broadcast.h"

namespace lemon::telemetry {

struct Event {
  std::int64_t time_ms = 0;  // Unix milliseconds
  std::string type;          // "load_started", "request", ...
  nlohmann::json data;       // the type's fields ("model", ...)
};

// The SSE frame of one event: `id: N`, then one `data:` line holding
// {"id","time","type", ...data}.
std::string event_sse_frame(std::uint64_t id, const Event& event);

class EventBus {
 public:
  using Stream = Broadcast<Event>;

  EventBus() : stream_(1000, 4096) {}

  // Publishes `type` with `data` (an object) stamped with the current time.
  std::uint64_t publish(std::string type, nlohmann::json data);

  std::shared_ptr<Stream::Follower> follow(std::optional<std::uint64_t> after,
                                           std::size_t backlog) {
    return stream_.follow(after, backlog);
  }
  int followers() const { return stream_.followers(); }
  bool wants_request_events() const { return stream_.maybe_followed() && stream_.followers() > 0; }
  std::uint64_t last_id() const { return stream_.last_id(); }
  void close() { stream_.close(); }

 private:
  Stream stream_;
};

}  // namespace lemon::telemetry
