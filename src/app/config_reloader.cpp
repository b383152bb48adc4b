#include "lemon/app/config_reloader.h"

#include "lemon/core/clock.h"
#include "lemon/core/log.h"
#include "lemon/http/error_response.h"

namespace lemon {
namespace {

// The settings a running router takes at once: the log level here, the
// rest through the router (LiveRouterSettings).
const std::set<std::string>& router_settings() {
  static const std::set<std::string> keys = {"max_loaded_models", "keep_alive",
                                             "scale_up_after",    "scale_down_after",
                                             "max_starvation",    "default_model_delay"};
  return keys;
}

const std::set<std::string>& live_settings() {
  static const std::set<std::string> live = [] {
    std::set<std::string> keys = router_settings();
    keys.insert("log_level");
    return keys;
  }();
  return live;
}

bool is_secret(const std::string& key) {
  return key == "api_key";
}

}  // namespace

ConfigChanges classify_config_changes(const std::map<std::string, std::string>& running,
                                      const std::map<std::string, std::string>& read,
                                      const std::set<std::string>& live) {
  ConfigChanges out;
  for (const auto& [key, value] : read) {
    auto was = running.find(key);
    if (was != running.end() && was->second == value) {
      continue;
    }
    (live.contains(key) ? out.applied : out.pending).push_back(key);
  }
  for (const auto& [key, value] : running) {
    if (!read.contains(key)) {
      (live.contains(key) ? out.applied : out.pending).push_back(key);
    }
  }
  return out;
}

ConfigReloader::ConfigReloader(std::vector<std::string> argv, const Config& running,
                               telemetry::EventBus& events,
                               std::function<void(const Config&)> apply_to_router)
    : argv_(std::move(argv)),
      events_(events),
      apply_to_router_(std::move(apply_to_router)),
      running_(running),
      read_(running) {}

void ConfigReloader::reload() {
  std::vector<const char*> argv;
  for (const auto& a : argv_) {
    argv.push_back(a.c_str());
  }
  argv.push_back(nullptr);
  ParsedConfig parsed = parse_config(static_cast<int>(argv_.size()), argv.data());
  auto log = logger("app");
  nlohmann::json event;
  std::optional<Config> for_router;
  {
    MutexLock lock(mu_);
    ++reloads_;
    last_reload_ms_ = unix_ms_now();
    if (parsed.exit_now) {
      last_error_ = parsed.message;
      event = {{"ok", false}, {"error", last_error_}};
    } else {
      last_error_.clear();
      read_ = parsed.config;
      const ConfigChanges changes =
          classify_config_changes(running_.setting_values, read_.setting_values, live_settings());
      for (const auto& key : changes.applied) {
        if (key == "log_level") {
          set_log_level(read_.log_level);
          running_.log_level = read_.log_level;
        } else if (router_settings().contains(key)) {
          for_router = read_;
        }
        running_.setting_values[key] = read_.setting_values[key];
        running_.setting_sources[key] = read_.setting_sources[key];
      }
      pending_ = changes.pending;
      event = {{"ok", true}, {"applied", changes.applied}, {"pending", changes.pending}};
    }
  }
  if (for_router && apply_to_router_) {
    apply_to_router_(*for_router);  // without mu_: the router takes its own lock
  }
  if (event["ok"] == false) {
    log->error("configuration not reloaded, the running one stays: {}",
               event["error"].get<std::string>());
  } else {
    log->info("configuration reloaded: {} applied, {} pending a restart ({})",
              event["applied"].size(), event["pending"].size(), event["pending"].dump());
  }
  events_.publish("config_reloaded", event);
}

nlohmann::json ConfigReloader::snapshot() const {
  MutexLock lock(mu_);
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& [key, value] : running_.setting_values) {
    auto source = running_.setting_sources.find(key);
    settings[key] = {
        {"value", is_secret(key) && !value.empty() ? std::string("(set)") : value},
        {"source", source != running_.setting_sources.end() ? source->second : "default"}};
  }
  nlohmann::json pending = nlohmann::json::object();
  for (const auto& key : pending_) {
    auto value = read_.setting_values.find(key);
    const std::string text = value != read_.setting_values.end() ? value->second : "";
    pending[key] = is_secret(key) && !text.empty() ? std::string("(set)") : text;
  }
  return {
      {"config_file", running_.config_file},
      {"settings", std::move(settings)},
      {"pending_restart", std::move(pending)},
      {"reloads", reloads_},
      {"last_reload", last_reload_ms_ > 0
                          ? nlohmann::json(static_cast<double>(last_reload_ms_) / 1000.0)
                          : nlohmann::json(nullptr)},
      {"last_error", last_error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(last_error_)}};
}

void ConfigReloader::register_routes(http::ApiRoutes& routes) {
  const auto show = [this](net::Request&, net::ResponseWriter& w, std::string_view) {
    http::send_json(w, 200, snapshot());
  };
  routes.route("GET", "internal/config", http::RouteAccess::kRead, show);
  routes.root("GET", "/internal/config", http::RouteAccess::kRead, show);
}

}  // namespace lemon
