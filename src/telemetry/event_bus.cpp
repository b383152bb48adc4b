#include "lemon/telemetry/event_bus.h"

#include <chrono>

#include "lemon/core/clock.h"

namespace lemon::telemetry {

std::string event_sse_frame(std::uint64_t id, const Event& event) {
  nlohmann::json j = {
      {"id", id}, {"time", static_cast<double>(event.time_ms) / 1000.0}, {"type", event.type}};
  if (event.data.is_object()) {
    for (const auto& [key, value] : event.data.items()) {
      j[key] = value;
    }
  }
  return "id: " + std::to_string(id) +
         "\ndata: " + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

std::uint64_t EventBus::publish(std::string type, nlohmann::json data) {
  Event e;
  e.time_ms = unix_ms_now();
  e.type = std::move(type);
  e.data = std::move(data);
  return stream_.publish(std::move(e));
}

}  // namespace lemon::telemetry
