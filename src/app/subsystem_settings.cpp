#include "lemon/app/subsystem_settings.h"

#include <filesystem>
#include <utility>

#include "lemon/backends/backend_release.h"
#include "lemon/backends/slot_files.h"
#include "lemon/backends/system_info.h"

namespace lemon {

CatalogueSources catalogue_sources(const Config& cfg,
                                   std::function<std::vector<std::string>()> flm_installed) {
  CatalogueSources sources;
  sources.server_models_json = cfg.resources_dir + "/server_models.json";
  sources.cache_dir = cfg.cache_dir;
  sources.hf_hub_cache = cfg.hf_hub_cache;
  sources.extra_models_dir = cfg.extra_models_dir;
  sources.flm_installed = std::move(flm_installed);
  return sources;
}

PresetSources preset_sources(const Config& cfg) {
  PresetSources sources;
  sources.builtin_json = cfg.resources_dir + "/presets.json";
  sources.cache_dir = cfg.cache_dir;
  sources.hf_hub_cache = cfg.hf_hub_cache;
  return sources;
}

BackendEnvironment backend_environment(const Config& cfg, ProcessLauncher& launcher,
                                       PortAllocator& ports) {
  BackendEnvironment env;
  env.launcher = &launcher;
  env.ports = &ports;
  env.load_timeout = cfg.load_timeout;
  env.stop_grace = cfg.stop_grace;
  env.cache_dir = cfg.cache_dir;
  if (cfg.slot_cache_size) {
    env.slot_cache_dir = slot_cache_dir(cfg);
  }
  env.verbose = cfg.log_level == "debug" || cfg.log_level == "trace";
  return env;
}

RouterConfig router_config(const Config& cfg, std::shared_ptr<DeviceMemorySource> memory) {
  RouterConfig out;
  out.limits = cfg.limits;
  out.cli_options = cfg.cli_options;
  out.max_queued_per_model = cfg.max_queued_per_model;
  out.max_queued_total = cfg.max_queued_total;
  out.max_replicas = cfg.max_replicas;
  out.scale_up_after = cfg.scale_up_after;
  out.scale_down_after = cfg.scale_down_after;
  out.keep_alive = cfg.keep_alive;
  out.max_starvation = cfg.max_starvation;
  out.default_models = cfg.default_models;
  out.default_model_delay = cfg.default_model_delay;
  if (cfg.memory_budget) {
    out.memory = std::move(memory);
    out.memory_budget_on = true;
    out.memory_budget = *cfg.memory_budget;
    out.memory_margin = cfg.memory_margin;
    out.memory_poll_interval = cfg.memory_poll_interval;
  }
  return out;
}

remote::RemoteSettings remote_settings(const Config& cfg) {
  return remote::parse_remote_settings(cfg.remote, cfg.remote_discovery)
      .value_or(remote::RemoteSettings{});
}

http::ApiSettings api_settings(const Config& cfg) {
  http::ApiSettings out;
  out.host = cfg.host;
  out.port = cfg.port;
  out.server.max_body_bytes = cfg.max_body_bytes;
  out.server.max_connections = cfg.max_connections;
  out.server.max_request_memory = cfg.max_request_memory;
  out.server.max_connections_per_client = cfg.max_connections_per_client;
  out.server.header_timeout = cfg.header_timeout;
  out.server.body_idle_timeout = cfg.body_timeout;
  out.server.body_min_rate = cfg.body_min_rate;
  out.server.keep_alive_timeout = cfg.keep_alive_timeout;
  out.server.write_timeout = cfg.write_timeout;
  auto keys = http::build_key_ring(cfg.auth, cfg.api_key, cfg.admin_api_key);
  // parse_config checked them; were they broken all the same, no key would
  // open anything (a ring whose only key no one holds), never none needed.
  out.keys = keys.ok() ? std::move(*keys)
                       : http::KeyRing({http::ApiKey{"unusable", http::KeyHash{}, 0, {}, 0, 0}});
  const std::string audit = http::audit_log_path(cfg.auth);
  out.audit_log_file =
      !audit.empty() ? audit : (std::filesystem::path(cfg.cache_dir) / "audit.jsonl").string();
  out.access.health_without_auth = cfg.health_without_auth;
  out.access.metrics_public = cfg.metrics_public;
  out.access.cors_origins = cfg.cors_origins;
  out.ollama_port = cfg.ollama_port;
  out.websocket_port = cfg.websocket_port;
  return out;
}

inference::ForwardSettings forward_settings(const Config& cfg) {
  inference::ForwardSettings out;
  out.max_response_bytes = cfg.max_response_bytes;
  out.request_timeout = cfg.request_timeout;
  out.backend_retry_delay = cfg.backend_retry_delay;
  out.stream_idle_timeout = cfg.stream_idle_timeout;
  out.backend_idle_timeout = cfg.backend_idle_timeout;
  out.stream_heartbeat = cfg.stream_heartbeat;
  out.max_prefill_tokens = cfg.max_prefill_tokens;
  return out;
}

api::LemonadeSettings lemonade_settings(const Config& cfg) {
  api::LemonadeSettings out;
  out.cache_dir = cfg.cache_dir;
  out.web_dir = cfg.resources_dir + "/web";
  out.session_ttl = cfg.session_ttl;
  out.session_journal_dir = (std::filesystem::path(cfg.cache_dir) / "sessions").string();
  return out;
}

InstallerSettings installer_settings(const Config& cfg, const HubSettings& hub) {
  InstallerSettings out;
  out.cache_dir = cfg.cache_dir;
  out.resources_dir = cfg.resources_dir;
  out.releases_base = releases_base_url();
  out.rocm_arch = rocm_gfx_target();
  out.offline = hub.offline;
  out.transfer = hub.transfer;
  return out;
}

std::string slot_cache_dir(const Config& cfg) {
  return (std::filesystem::path(cfg.cache_dir) / "slot_cache").string();
}

std::optional<SlotFileStoreSettings> slot_store_settings(const Config& cfg) {
  if (!cfg.slot_cache_size) {
    return std::nullopt;
  }
  SlotFileStoreSettings out;
  out.root = slot_cache_dir(cfg);
  out.min_tokens = cfg.slot_save_min_tokens;
  out.timeout = cfg.slot_save_timeout;
  out.budget_bytes = *cfg.slot_cache_size;
  if (out.budget_bytes == 0) {
    std::error_code ec;
    std::filesystem::create_directories(out.root, ec);
    const auto space = std::filesystem::space(out.root, ec);
    out.budget_bytes = default_slot_cache_budget(ec ? 0 : space.available);
  }
  return out;
}

}  // namespace lemon
