// What each room of the daemon is given from the Config: the catalogue's and
// the presets' sources, the backends' environment, the router's and the
// API's settings, the installer's. main() wires the rooms with these and
// copies no field itself.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <functional>
#include <memory>

#include "lemon/api/lemonade/lemonade_settings.h"
#include "lemon/app/config.h"
#include "lemon/backends/backend_installer.h"
#include "lemon/backends/process_server.h"
#include "lemon/backends/slot_file_store.h"
#include "lemon/http/api_server.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/hub_client.h"
#include "lemon/models/preset_catalogue.h"
#include "lemon/remote/remote_spec.h"
#include "lemon/router/router.h"

namespace lemon {

// server_models.json from resources_dir, the user files from cache_dir, the
// HF cache, the extra models dir; `flm_installed` lists FLM's local models.
CatalogueSources catalogue_sources(const Config& cfg,
                                   std::function<std::vector<std::string>()> flm_installed);

// presets.json from resources_dir, the user's presets from cache_dir.
PresetSources preset_sources(const Config& cfg);

// The launcher and the port allocator are the caller's and outlive every
// backend.
BackendEnvironment backend_environment(const Config& cfg, ProcessLauncher& launcher,
                                       PortAllocator& ports);

// Limits, queues, the pool and memory admission. `memory` reads the devices'
// memory; it is used only when --memory-budget is on. on_event is left to
// the caller.
RouterConfig router_config(const Config& cfg, std::shared_ptr<DeviceMemorySource> memory);

// The HTTP server's limits and timeouts, and access.
http::ApiSettings api_settings(const Config& cfg);

// The inference path's limits and timeouts.
inference::ForwardSettings forward_settings(const Config& cfg);

// Remote models (issue #30 §3): config.json's remote and remote_discovery,
// already checked by parse_config (a default when they do not parse).
remote::RemoteSettings remote_settings(const Config& cfg);

// Lemonade's management rooms: /system-info's lookups, the dashboard's
// files, sessions.
api::LemonadeSettings lemonade_settings(const Config& cfg);

// Where backends are installed from and to; offline and transfer settings
// follow the hub's.
InstallerSettings installer_settings(const Config& cfg, const HubSettings& hub);

// Saved llama.cpp slots (issue #29 §1): <cache dir>/slot_cache, and the
// store's settings, with --slot-cache-size's auto resolved against the free
// space there now. nullopt when --slot-cache-size is off.
std::string slot_cache_dir(const Config& cfg);
std::optional<SlotFileStoreSettings> slot_store_settings(const Config& cfg);

}  // namespace lemon
