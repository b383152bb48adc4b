// DaemonOptions: what lemonade-router runs with, one struct per layer,
// each declared by its layer and handed to it whole (as leveldb hands its
// Options): parse_config reads the settings (options/settings_reader.h)
// and binds each one into the struct of the layer it belongs to
// (setting_bindings.cpp, one line a setting); a reload hands each layer
// whose live settings changed its new struct (config_reloader.h).
//
// Adding a setting: a field in its layer's struct, a row in the table
// (src/options/router_settings.cpp), a line binding the one to the other
// (src/app/setting_bindings.cpp), and docs/configuration.md's table.
//
// Thread-safety: value types; parse once in main, again at each reload.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/api/lemonade/lemonade_settings.h"
#include "lemon/backends/backend_installer.h"
#include "lemon/backends/process_server.h"
#include "lemon/backends/slot_file_store.h"
#include "lemon/http/api_server.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/hub_client.h"
#include "lemon/models/preset_catalogue.h"
#include "lemon/options/settings_reader.h"
#include "lemon/remote/remote_spec.h"
#include "lemon/router/profile_plan.h"
#include "lemon/router/router.h"

namespace lemon {

// What main itself runs with, and where the router keeps its files.
struct AppOptions {
  std::string log_level = "info";
  std::chrono::milliseconds drain_timeout{30'000};  // SIGTERM: in-flight requests may finish
  bool no_broadcast = false;  // --no-broadcast: no loopback beacon (net/loopback_beacon.h)
  int beacon_port = 13305;    // --beacon-port: where on 127.0.0.1 the beacon goes
  std::string profile;        // --profile: switched to once listening ("" none)
  int ready_fd = -1;          // --ready-fd: write "PORT\n" here once listening, then close it
  bool offline = false;       // --offline: the hub's settings download nothing (HF_HUB_OFFLINE too)
  // Places, from the environment rather than settings: LEMONADE_CACHE_DIR
  // or ~/.cache/lemonade; HF_HUB_CACHE, $HF_HOME/hub or
  // ~/.cache/huggingface/hub unless --models-dir names a folder; where
  // server_models.json lives; and
  // LEMONADE_RUNTIME_DIR, else /tmp (the CLI's pid file and lock, the
  // routers' shared port reservations).
  std::string cache_dir;
  std::string hf_hub_cache;
  std::string resources_dir;
  std::string runtime_dir = "/tmp";
};

struct DaemonOptions {
  AppOptions app;
  http::ApiSettings http;              // listeners, net's limits, access, keys
  inference::ForwardSettings forward;  // the inference path's limits and timeouts
  RouterConfig router;                 // main adds the device memory, events, slot store
  Profiles profiles;                   // config.json's profiles
  remote::RemoteSettings remote;       // config.json's remote and remote_discovery
  BackendEnvironment backends;         // main adds the launcher and the ports
  // Saved llama.cpp slots; nullopt when --slot-cache-size
  // is off; a budget of 0 is auto (with_auto_slot_budget()).
  std::optional<SlotFileStoreSettings> slot_store;
  CatalogueSources catalogue;  // main adds FLM's and the remote models
  PresetSources presets;
  api::LemonadeSettings lemonade;
};

// The outcome of parsing: the options and where each setting came from, or
// a request to exit (help, version or the settings' table printed: exit
// code 0; invalid input: a one-line message and exit code 2).
struct ParsedConfig {
  DaemonOptions options;
  SettingsProvenance provenance;
  bool exit_now = false;
  int exit_code = 0;
  std::string message;  // the one-line error for exit code 2
  std::string param;    // the config.json key it is about, when it names one
};

// Reads the settings (argv, the environment, the files) and binds them.
// Never exits the process itself. `config_json`, when given, stands for
// config.json's content (POST /internal/set checks a change before it
// writes it).
ParsedConfig parse_config(int argc, const char* const* argv,
                          const std::optional<nlohmann::json>& config_json = std::nullopt);
// The same over a command line held as strings (args[0] is the program).
ParsedConfig parse_config(const std::vector<std::string>& args,
                          const std::optional<nlohmann::json>& config_json = std::nullopt);

// The parts of DaemonOptions a reload can hand over while the router runs.
enum class LivePart : std::uint8_t {
  kLogLevel,
  kRouter,
  kHttp,
  kForward,
  kRemote,
  kProfiles,
  kCatalogue,
};
// The parts the settings `keys` are bound into (a setting that applies
// only at a restart is in none).
std::set<LivePart> live_parts_of(const std::vector<std::string>& keys);

// Where backends are installed from and to: the cache and resources
// folders, the release mirror and the AMD GPU's target from the machine;
// offline and transfer settings follow the hub's.
InstallerSettings installer_settings(const AppOptions& app, const HubSettings& hub);

// `store` with an auto budget (0) made a tenth of the free space in its
// folder now, at most 32 GiB (the folder is created).
SlotFileStoreSettings with_auto_slot_budget(SlotFileStoreSettings store);

}  // namespace lemon
