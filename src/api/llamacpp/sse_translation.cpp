#include "lemon/api/llamacpp/sse_translation.h"

namespace lemon::api {

namespace {

nlohmann::ordered_json event_of(const std::string& model, const char* event,
                                nlohmann::ordered_json data = nullptr) {
  nlohmann::ordered_json j = {{"model", model}, {"event", event}};
  if (!data.is_null()) {
    j["data"] = std::move(data);
  }
  return j;
}

nlohmann::ordered_json status(const char* value) {
  return {{"status", value}};
}

}  // namespace

std::vector<nlohmann::ordered_json> llamacpp_events(const telemetry::Event& e,
                                                    const SseNames& names) {
  const std::string server = e.data.value("model", "");
  const std::string& type = e.type;
  if (type == "models_reload") {
    return {event_of("*", "models_reload")};
  }
  if (server.empty()) {
    return {};
  }
  const std::string id = e.data.contains("id") && e.data["id"].is_string()
                             ? e.data["id"].get<std::string>()
                             : names.id_of(server);
  if (type == "load_started") {
    return {event_of(id, "model_status", status("loading"))};
  }
  if (type == "backend_state") {
    const std::string state = e.data.value("state", "");
    if (state == "loading") {
      auto data = status("loading");
      if (e.data.contains("progress")) {
        data["progress"] = nlohmann::ordered_json(e.data["progress"]);
      }
      return {event_of(id, "status_change", std::move(data))};
    }
    if (state == "sleeping") {
      return {event_of(id, "status_change", status("sleeping"))};
    }
    if (state == "ready" && e.data.value("woke", false)) {
      return {event_of(id, "status_change", status("loaded"))};
    }
    return {};
  }
  if (type == "load_succeeded") {
    auto data = status("loaded");
    if (auto info = names.info_of(server); info.is_object()) {
      data["info"] = nlohmann::ordered_json(info);
    }
    return {event_of(id, "status_change", std::move(data))};
  }
  if (type == "load_failed" || type == "server_crashed") {
    if (type == "server_crashed" && names.still_served(server)) {
      return {};
    }
    auto data = status("unloaded");
    data["exit_code"] = 1;
    return {event_of(id, "status_change", std::move(data))};
  }
  if (type == "server_stopped") {
    if (names.still_served(server)) {
      return {};  // another replica serves it still
    }
    auto data = status("unloaded");
    data["exit_code"] = 0;
    return {event_of(id, "status_change", std::move(data))};
  }
  if (type == "download_progress") {
    auto files = names.downloads_of(server);
    if (files.is_null()) {
      files = nlohmann::ordered_json::object();
      files[e.data.value("file", "")] = {{"done", e.data.value("bytes_downloaded", 0ULL)},
                                         {"total", e.data.value("bytes_total", 0ULL)}};
    }
    return {event_of(id, "download_progress", {{"progress", std::move(files)}})};
  }
  if (type == "download_complete") {
    return {event_of(id, "download_finished")};
  }
  if (type == "download_failed") {
    return {event_of(id, "download_failed")};
  }
  if (type == "model_removed") {
    return {event_of(id, "model_remove")};
  }
  return {};
}

}  // namespace lemon::api
