#include "lemon/app/daemon_options.h"

#include "setting_bindings.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "lemon/backends/backend_release.h"
#include "lemon/backends/slot_files.h"
#include "lemon/backends/system_info.h"

namespace lemon {
namespace {

// ---- where the router keeps its files -------------------------------------------------------

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string default_hf_hub_cache(const std::string& home) {
  if (const char* hub = std::getenv("HF_HUB_CACHE"); hub != nullptr && *hub != '\0') {
    return hub;
  }
  if (const char* hf_home = std::getenv("HF_HOME"); hf_home != nullptr && *hf_home != '\0') {
    return std::string(hf_home) + "/hub";
  }
  return home + "/.cache/huggingface/hub";
}

// resources/ next to the executable (the build copies it there), then an
// installation's ../share/lemonade-router/resources, else the source tree's.
std::string default_resources_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const auto& dir :
         {exe.parent_path() / "resources",
          exe.parent_path().parent_path() / "share" / "lemonade-router" / "resources"}) {
      if (std::filesystem::exists(dir / "server_models.json", ec)) {
        return dir.string();
      }
    }
  }
  return LEMON_RESOURCES_DIR;
}

// The folders, and every layer's files in them.
void place_files(DaemonOptions& o) {
  AppOptions& app = o.app;
  const std::string home = env_or("HOME", "/tmp");
  app.cache_dir = env_or("LEMONADE_CACHE_DIR", home + "/.cache/lemonade");
  app.hf_hub_cache = default_hf_hub_cache(home);
  app.resources_dir = default_resources_dir();
  app.runtime_dir = env_or("LEMONADE_RUNTIME_DIR", app.runtime_dir);
  o.catalogue.server_models_json = app.resources_dir + "/server_models.json";
  o.catalogue.cache_dir = app.cache_dir;
  o.catalogue.hf_hub_cache = app.hf_hub_cache;
  o.presets.builtin_json = app.resources_dir + "/presets.json";
  o.presets.cache_dir = app.cache_dir;
  o.presets.hf_hub_cache = app.hf_hub_cache;
  o.backends.cache_dir = app.cache_dir;
  o.lemonade.cache_dir = app.cache_dir;
  o.lemonade.web_dir = app.resources_dir + "/web";
  o.lemonade.session_journal_dir = (std::filesystem::path(app.cache_dir) / "sessions").string();
}

ParsedConfig refused(const std::string& message) {
  ParsedConfig p;
  p.exit_now = true;
  p.exit_code = 2;
  p.message = one_line(message);
  return p;
}

}  // namespace

ParsedConfig parse_config(int argc, const char* const* argv,
                          const std::optional<nlohmann::json>& config_json) {
  SettingsRead read = read_router_settings(argc, argv, config_json);
  ParsedConfig parsed;
  if (read.exit_now) {
    parsed.exit_now = true;
    parsed.exit_code = read.exit_code;
    parsed.message = std::move(read.message);
    parsed.param = std::move(read.param);
    return parsed;
  }
  place_files(parsed.options);
  for (const SettingBinding& binding : setting_bindings()) {
    if (Status bound = binding.bind(read, parsed.options); !bound.ok()) {
      return refused(bound.error().message());
    }
  }
  parsed.provenance = std::move(read.provenance);
  return parsed;
}

ParsedConfig parse_config(const std::vector<std::string>& args,
                          const std::optional<nlohmann::json>& config_json) {
  const std::vector<const char*> argv = argv_of(args);
  return parse_config(static_cast<int>(args.size()), argv.data(), config_json);
}

std::set<LivePart> live_parts_of(const std::vector<std::string>& keys) {
  std::set<LivePart> parts;
  for (const SettingBinding& binding : setting_bindings()) {
    const bool named = std::any_of(binding.keys.begin(), binding.keys.end(), [&](const auto& k) {
      return std::find(keys.begin(), keys.end(), k) != keys.end();
    });
    if (named && binding.part) {
      parts.insert(*binding.part);
    }
  }
  return parts;
}

InstallerSettings installer_settings(const AppOptions& app, const HubSettings& hub) {
  InstallerSettings out;
  out.cache_dir = app.cache_dir;
  out.resources_dir = app.resources_dir;
  out.releases_base = releases_base_url();
  out.rocm_arch = rocm_gfx_target();
  out.offline = hub.offline;
  out.transfer = hub.transfer;
  return out;
}

SlotFileStoreSettings with_auto_slot_budget(SlotFileStoreSettings store) {
  if (store.budget_bytes == 0) {
    std::error_code ec;
    std::filesystem::create_directories(store.root, ec);
    const auto space = std::filesystem::space(store.root, ec);
    store.budget_bytes = default_slot_cache_budget(ec ? 0 : space.available);
  }
  return store;
}

}  // namespace lemon
