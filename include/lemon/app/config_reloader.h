// ConfigReloader: SIGHUP, a change of config.json (inotify
// on its folder) and POST /internal/set read the configuration again (the
// defaults file, config.json, the environment the router started with and
// its flags) and apply what can change in a running router; the rest is
// pending until a restart. POST /internal/set (Lemonade's route) merges its
// body into config.json, checked first and written atomically, keeping
// every key it does not name. An invalid file changes nothing: the running
// configuration stays and the error is logged, published as a
// `config_reloaded` event and shown by GET /internal/config, which also
// shows every setting's value and source (the API key redacted).
//
// A config.json that is not a JSON object is never overwritten: POST
// /internal/set answers 409 config_file_invalid naming the file and, for a
// parse error, its line and column. When config.json cannot be written (a
// read-only folder, such as a Kubernetes ConfigMap mount), the change is
// applied to this run only and the answer is 409 config_not_saved; such
// changes are laid over the file at every reload until the file itself
// changes (then the file wins) or the router restarts.
//
// Which settings apply live is their row's say (options/router_settings.h,
// docs/configuration.md): log_level; the router's (LiveRouterSettings)
// max_loaded_models, keep_alive, scale_up_after, scale_down_after,
// max_starvation, default_model_delay, the memory budget's size and margin
// while it stays on, and the load options (a model they change reloads once
// idle); the HTTP server's API keys (api_key, admin_api_key, auth) and
// cors_origins; profiles; remote models; the inference path's limits and
// timeouts. Each layer one of them changed is handed its new options whole
// (LiveTargets). Every other changed setting is listed as pending.
//
// Thread-safety: reload() and the route may run on any thread at once.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/app/daemon_options.h"
#include "lemon/core/mutex.h"
#include "lemon/http/api_routes.h"
#include "lemon/telemetry/event_bus.h"

namespace lemon {

// What a reload does with the settings that changed: those in `live` apply
// now, the others wait for a restart, and so does `memory_budget` turned on
// or off (its size changes live). A pure function over two snapshots of
// setting values (key -> text).
struct ConfigChanges {
  std::vector<std::string> applied;
  std::vector<std::string> pending;
};
ConfigChanges classify_config_changes(const std::map<std::string, std::string>& running,
                                      const std::map<std::string, std::string>& read,
                                      const std::set<std::string>& live);

// Whether a reload applies setting `key` in a running router (else it waits
// for a restart).
bool applies_live(const std::string& key);

// The layers a reload hands their new options to, each whole, when one of
// their live settings changed; an unset one is skipped. The log level the
// reloader sets itself.
struct LiveTargets {
  std::function<void(const RouterConfig&)> router;
  std::function<void(const http::ApiSettings&)> http;
  std::function<void(const inference::ForwardSettings&)> forward;
  std::function<void(const remote::RemoteSettings&)> remote;
  std::function<void(const Profiles&)> profiles;
};

class ConfigReloader {
 public:
  // `argv` is the router's command line; `running` the settings it started
  // with; `events` gets config_reloaded.
  ConfigReloader(std::vector<std::string> argv, const SettingsProvenance& running,
                 telemetry::EventBus& events, LiveTargets targets);

  ~ConfigReloader();  // stops watching
  ConfigReloader(const ConfigReloader&) = delete;
  ConfigReloader& operator=(const ConfigReloader&) = delete;

  // Reads the configuration again and applies it; returns the
  // config_reloaded event it published.
  nlohmann::json reload();
  // Merges `changes` into config.json (a section's keys one by one; null
  // removes a key), if the result is valid, then reloads. kInvalidRequest
  // naming the key when it is not; kConfigFileInvalid when config.json is
  // broken (nothing changes); kConfigNotSaved when it could not be written
  // (the change is applied to this run only).
  Result<nlohmann::json> set(const nlohmann::json& changes);
  nlohmann::json snapshot() const;
  void register_routes(http::ApiRoutes& routes);
  // Reloads when config.json changes (its folder watched with inotify, which
  // also sees a Kubernetes ConfigMap's "..data" link swapped; a folder that
  // does not exist yet is not watched: SIGHUP still works).
  void start_watching();

 private:
  // parse_config over config.json with the unsaved changes laid over it
  // (dropped first if the file changed since they were made).
  ParsedConfig parse_with_unsaved() LEMON_EXCLUDES(mu_);

  // Hands each layer of `parts` its options from `read`.
  void apply(const DaemonOptions& read, const std::set<LivePart>& parts) const;

  const std::vector<std::string> argv_;
  telemetry::EventBus& events_;
  const LiveTargets targets_;
  Mutex reload_mu_;  // one reload() at a time (taken before mu_)
  Mutex set_mu_;     // one POST /internal/set at a time (read, merge, write)
  mutable Mutex mu_;
  // What the router runs with (live settings applied), and the last
  // settings read without error.
  SettingsProvenance running_ LEMON_GUARDED_BY(mu_);
  SettingsProvenance read_ LEMON_GUARDED_BY(mu_);
  std::vector<std::string> pending_ LEMON_GUARDED_BY(mu_);
  std::string last_error_ LEMON_GUARDED_BY(mu_);
  std::int64_t last_reload_ms_ LEMON_GUARDED_BY(mu_) = 0;
  int reloads_ LEMON_GUARDED_BY(mu_) = 0;
  // Changes POST /internal/set could not save, in order, and the text of
  // config.json when they were made: laid over the file while it keeps
  // that text.
  std::vector<nlohmann::json> unsaved_ LEMON_GUARDED_BY(mu_);
  std::string unsaved_over_ LEMON_GUARDED_BY(mu_);
  int stop_fd_ = -1;  // eventfd: ends the watcher
  std::thread watcher_;
};

}  // namespace lemon
