#include "setting_bindings.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "lemon/auth/api_keys.h"
#include "lemon/core/duration_text.h"
#include "lemon/options/router_settings.h"

namespace lemon {
namespace {

// A setting's value as the field's type: seconds as milliseconds, MiB as
// bytes (by its row's unit).
template <class T>
void assign(const Setting& s, const SettingValues& v, T& out) {
  if constexpr (std::is_same_v<T, std::chrono::milliseconds>) {
    out = v.duration(s.key);
  } else if constexpr (std::is_same_v<T, bool>) {
    out = v.on(s.key);
  } else if constexpr (std::is_same_v<T, int>) {
    out = v.integer(s.key);
  } else if constexpr (std::is_same_v<T, long long>) {
    out = v.long_integer(s.key);
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = v.text(s.key);
  } else if constexpr (std::is_integral_v<T>) {  // a count of bytes
    out = s.unit == SettingUnit::kMebibytes
              ? static_cast<T>(v.mebibytes(s.key))
              : static_cast<T>(std::clamp(v.number(s.key), 0.0, 1e15));
  } else {
    static_assert(sizeof(T) == 0, "no conversion from a setting to this type");
  }
}

constexpr std::optional<LivePart> part_of(http::ApiSettings DaemonOptions::*) {
  return LivePart::kHttp;
}
constexpr std::optional<LivePart> part_of(inference::ForwardSettings DaemonOptions::*) {
  return LivePart::kForward;
}
constexpr std::optional<LivePart> part_of(RouterConfig DaemonOptions::*) {
  return LivePart::kRouter;
}
template <class Layer>
constexpr std::optional<LivePart> part_of(Layer DaemonOptions::*) {
  return std::nullopt;
}

// `key` (a row of the table: setting_bindings() checks) into a field of a
// layer's options.
template <class Layer, class T>
SettingBinding field(const std::string& key, Layer DaemonOptions::*layer, T Layer::*member) {
  return {{key}, part_of(layer), [key, layer, member](const SettingsRead& r, DaemonOptions& o) {
            assign(*find_setting(key), r.values, o.*layer.*member);
            return ok_status();
          }};
}

// `key` into a field of a struct inside a layer's options.
template <class Layer, class Inner, class T>
SettingBinding field(const std::string& key, Layer DaemonOptions::*layer, Inner Layer::*inner,
                     T Inner::*member) {
  return {
      {key}, part_of(layer), [key, layer, inner, member](const SettingsRead& r, DaemonOptions& o) {
        assign(*find_setting(key), r.values, o.*layer.*inner.*member);
        return ok_status();
      }};
}

// The CLI layer of the load options, inheriting the built-in defaults.
Status bind_load_options(const SettingsRead& r, DaemonOptions& o) {
  nlohmann::json layer = nlohmann::json::object();
  for (const Setting& s : router_settings()) {
    if (s.load_option.empty()) {
      continue;
    }
    switch (s.shape) {
      case SettingShape::kInteger:
        layer[s.load_option] = r.values.integer(s.key);
        break;
      case SettingShape::kNumber:
        layer[s.load_option] = r.values.number(s.key);
        break;
      default: {
        // A number written as text ("--ctx-size 8192", which also takes
        // "auto") is the number.
        const std::string& text = r.values.text(s.key);
        const auto number = nlohmann::json::parse(text, nullptr, false);
        layer[s.load_option] = number.is_number_integer() ? number : nlohmann::json(text);
      }
    }
  }
  auto cli = RecipeOptions::from_json("", layer);
  if (!cli.ok()) {
    return std::move(cli).error();
  }
  o.router.cli_options = cli->inherit(RecipeOptions::defaults());
  return ok_status();
}

std::vector<std::string> load_option_keys() {
  std::vector<std::string> keys;
  for (const Setting& s : router_settings()) {
    if (!s.load_option.empty()) {
      keys.push_back(s.key);
    }
  }
  return keys;
}

// Lemonade 11's `<recipe>.<backend>_bin` rows and llamacpp.prefer_system.
std::vector<std::string> binary_keys() {
  std::vector<std::string> keys;
  for (const Setting& s : router_settings()) {
    if (s.key.ends_with("_bin")) {
      keys.push_back(s.key);
    }
  }
  keys.emplace_back("llamacpp.prefer_system");
  return keys;
}

// A path names the binary (relative ones from the working folder);
// builtin, latest and version tags keep the search (binary_locator.h).
Status bind_binaries(const SettingsRead& r, DaemonOptions& o) {
  for (const Setting& s : router_settings()) {
    if (!s.key.ends_with("_bin")) {
      continue;
    }
    const std::string& value = r.values.text(s.key);
    if (value.find('/') == std::string::npos) {
      continue;
    }
    o.backends.binaries.paths[s.variable] = std::filesystem::absolute(value).string();
  }
  if (r.values.text("llamacpp.prefer_system") == "false") {
    o.backends.binaries.installed_first.insert("llamacpp");
  }
  return ok_status();
}

// A section's error names where the section came from.
Error section_error(const SettingsRead& r, const std::string& key, const Error& e) {
  return Error(e.code(), r.provenance.sources.at(key) + ": " + e.message());
}

std::vector<SettingBinding> build_bindings() {
  using D = DaemonOptions;
  using S = net::ServerOptions;
  using A = http::AccessSettings;
  using F = inference::ForwardSettings;
  using R = RouterConfig;
  const auto server = &http::ApiSettings::server;
  const auto access = &http::ApiSettings::access;
  return {
      {{"log_level"},
       LivePart::kLogLevel,
       [](const SettingsRead& r, D& o) {
         o.app.log_level = r.values.text("log_level");
         o.backends.verbose = o.app.log_level == "debug" || o.app.log_level == "trace";
         return ok_status();
       }},
      field("drain_timeout", &D::app, &AppOptions::drain_timeout),
      field("offline", &D::app, &AppOptions::offline),
      {{"models_dir"},
       std::nullopt,
       [](const SettingsRead& r, D& o) {
         const std::string& dir = r.values.text("models_dir");
         if (dir.empty() || dir == "auto") {
           return ok_status();
         }
         o.app.hf_hub_cache = std::filesystem::absolute(dir).string();
         o.catalogue.hf_hub_cache = o.app.hf_hub_cache;
         o.presets.hf_hub_cache = o.app.hf_hub_cache;
         return ok_status();
       }},
      field("default_model_source", &D::lemonade, &api::LemonadeSettings::default_model_source),
      field("no_broadcast", &D::app, &AppOptions::no_broadcast),
      field("beacon_port", &D::app, &AppOptions::beacon_port),
      field("profile", &D::app, &AppOptions::profile),  // checked at start only
      field("ready_fd", &D::app, &AppOptions::ready_fd),

      field("host", &D::http, &http::ApiSettings::host),
      field("port", &D::http, &http::ApiSettings::port),
      field("max_body_size", &D::http, server, &S::max_body_bytes),
      field("max_connections", &D::http, server, &S::max_connections),
      field("max_connections_per_client", &D::http, server, &S::max_connections_per_client),
      field("max_request_memory", &D::http, server, &S::max_request_memory),
      field("header_timeout", &D::http, server, &S::header_timeout),
      field("body_timeout", &D::http, server, &S::body_idle_timeout),
      field("body_min_rate", &D::http, server, &S::body_min_rate),
      field("keep_alive_timeout", &D::http, server, &S::keep_alive_timeout),
      field("write_timeout", &D::http, server, &S::write_timeout),
      field("health_without_auth", &D::http, access, &A::health_without_auth),
      field("metrics_public", &D::http, access, &A::metrics_public),
      {{"cors_origins"},
       LivePart::kHttp,
       [](const SettingsRead& r, D& o) {
         o.http.access.cors_origins = r.values.list("cors_origins", "/");
         return ok_status();
       }},
      {{"ollama_port"},
       LivePart::kHttp,
       [](const SettingsRead& r, D& o) {
         const std::string& port = r.values.text("ollama_port");  // "" given without a value
         if (port != "off") {
           o.http.ollama_port = port.empty() ? 11434 : std::stoi(port);
         }
         return ok_status();
       }},
      {{"websocket_port"},
       LivePart::kHttp,
       [](const SettingsRead& r, D& o) {
         const std::string& port = r.values.text("websocket_port");
         if (port == "off") {
           o.http.websocket_port.reset();
         } else {
           o.http.websocket_port = port == "auto" ? 0 : std::stoi(port);
         }
         return ok_status();
       }},
      {{"auth", "api_key", "admin_api_key"},
       LivePart::kHttp,
       [](const SettingsRead& r, D& o) {
         const nlohmann::json& auth = r.values.section("auth");
         auto keys =
             auth::build_key_ring(auth, r.values.text("api_key"), r.values.text("admin_api_key"));
         if (!keys.ok()) {
           return Status(section_error(r, "auth", keys.error()));
         }
         o.http.keys = std::move(*keys);
         const std::string audit = auth::audit_log_path(auth);
         o.http.audit_log_file =
             !audit.empty() ? audit
                            : (std::filesystem::path(o.app.cache_dir) / "audit.jsonl").string();
         return ok_status();
       }},
      // Checked with the keys as the settings are read (settings_reader.h).
      {{"allow_unauthenticated"},
       std::nullopt,
       [](const SettingsRead&, D&) { return ok_status(); }},

      field("max_response_size", &D::forward, &F::max_response_bytes),
      field("request_timeout", &D::forward, &F::request_timeout),
      field("backend_retry_delay", &D::forward, &F::backend_retry_delay),
      field("stream_idle_timeout", &D::forward, &F::stream_idle_timeout),
      field("backend_idle_timeout", &D::forward, &F::backend_idle_timeout),
      field("stream_heartbeat", &D::forward, &F::stream_heartbeat),
      field("max_prefill_tokens", &D::forward, &F::max_prefill_tokens),
      field("no_models_autoload", &D::forward, &F::no_models_autoload),

      {{"max_loaded_models"},
       LivePart::kRouter,
       [](const SettingsRead& r, D& o) {
         std::string joined;
         for (const auto& m : r.values.words("max_loaded_models")) {
           joined += m + " ";
         }
         auto limits = SlotLimits::parse(joined);
         if (!limits.ok()) {
           return Status(std::move(limits).error());
         }
         o.router.limits = *limits;
         return ok_status();
       }},
      {load_option_keys(), LivePart::kRouter, bind_load_options},
      field("max_queued_requests", &D::router, &R::max_queued_per_model),
      field("max_queued_requests_total", &D::router, &R::max_queued_total),
      field("max_replicas", &D::router, &R::max_replicas),
      field("scale_up_after", &D::router, &R::scale_up_after),
      field("scale_down_after", &D::router, &R::scale_down_after),
      {{"keep_alive"},
       LivePart::kRouter,
       [](const SettingsRead& r, D& o) {
         if (auto ka = parse_keep_alive(r.values.text("keep_alive")); ka && ka->count() >= 0) {
           o.router.keep_alive = *ka;  // else forever
         }
         return ok_status();
       }},
      field("max_starvation", &D::router, &R::max_starvation),
      {{"default_model"},
       LivePart::kRouter,
       [](const SettingsRead& r, D& o) {
         for (auto& name : r.values.list("default_model")) {
           if (std::find(o.router.default_models.begin(), o.router.default_models.end(), name) ==
               o.router.default_models.end()) {
             o.router.default_models.push_back(std::move(name));
           }
         }
         return ok_status();
       }},
      field("default_model_delay", &D::router, &R::default_model_delay),
      {{"memory_budget"},
       LivePart::kRouter,
       [](const SettingsRead& r, D& o) {
         const std::string& text = r.values.text("memory_budget");
         if (auto rule = text == "off" ? std::nullopt : BudgetRule::parse(text)) {
           o.router.memory_budget_on = true;
           o.router.memory_budget = *rule;
         }
         return ok_status();
       }},
      field("memory_margin", &D::router, &R::memory_margin),
      field("auto_evict", &D::router, &R::auto_evict),
      {{"auto_evict_threshold_pct"},
       LivePart::kRouter,
       [](const SettingsRead& r, D& o) {
         o.router.auto_evict_threshold = r.values.number("auto_evict_threshold_pct");
         return ok_status();
       }},
      field("memory_poll_interval", &D::router, &R::memory_poll_interval),

      {{"profiles"},
       LivePart::kProfiles,
       [](const SettingsRead& r, D& o) {
         auto profiles = parse_profiles(r.values.section("profiles"));
         if (!profiles.ok()) {
           return Status(section_error(r, "profiles", profiles.error()));
         }
         o.profiles = std::move(*profiles);
         return ok_status();
       }},
      {{"remote", "remote_discovery"},
       LivePart::kRemote,
       [](const SettingsRead& r, D& o) {
         const nlohmann::json& remote = r.values.section("remote");
         const nlohmann::json& discovery = r.values.section("remote_discovery");
         if (auto models = remote::parse_remote_settings(remote, nullptr); !models.ok()) {
           return Status(section_error(r, "remote", models.error()));
         }
         if (auto discovered = remote::parse_remote_settings(nullptr, discovery);
             !discovered.ok()) {
           return Status(section_error(r, "remote_discovery", discovered.error()));
         }
         o.remote =
             remote::parse_remote_settings(remote, discovery).value_or(remote::RemoteSettings{});
         return ok_status();
       }},

      field("load_timeout", &D::backends, &BackendEnvironment::load_timeout),
      field("load_stall_timeout", &D::backends, &BackendEnvironment::load_stall_timeout),
      {binary_keys(), std::nullopt, bind_binaries},
      field("stop_grace", &D::backends, &BackendEnvironment::stop_grace),
      {{"slot_cache_size", "slot_save_min_tokens", "slot_save_timeout"},
       std::nullopt,
       [](const SettingsRead& r, D& o) {
         const std::string& size = r.values.text("slot_cache_size");
         if (size == "off") {
           return ok_status();
         }
         SlotFileStoreSettings store;
         store.root = std::filesystem::path(o.app.cache_dir) / "slot_cache";
         store.min_tokens = r.values.long_integer("slot_save_min_tokens");
         store.timeout = r.values.duration("slot_save_timeout");
         auto rule = BudgetRule::parse(size);
         store.budget_bytes =
             rule && rule->ram_bytes ? static_cast<std::uint64_t>(*rule->ram_bytes) : 0;  // 0: auto
         o.backends.slot_cache_dir = store.root.string();
         o.slot_store = std::move(store);
         return ok_status();
       }},
      field("session_ttl", &D::lemonade, &api::LemonadeSettings::session_ttl),
      {{"extra_models_dir"},
       LivePart::kCatalogue,
       [](const SettingsRead& r, D& o) {
         const std::string& dir = r.values.text("extra_models_dir");
         if (!dir.empty() && !std::filesystem::is_directory(dir)) {
           return Status(Error(ErrorCode::kInvalidRequest,
                               "--extra-models-dir: '" + dir + "' is not a directory"));
         }
         o.catalogue.extra_models_dir = dir;
         return ok_status();
       }},
      {{"models_preset"},
       std::nullopt,
       [](const SettingsRead& r, D& o) {
         // Read (and checked) by the preset catalogue at start.
         o.presets.llamacpp_ini = r.values.text("models_preset");
         return ok_status();
       }},
  };
}

}  // namespace

const std::vector<SettingBinding>& setting_bindings() {
  static const std::vector<SettingBinding> all = [] {
    std::vector<SettingBinding> b = build_bindings();
    std::map<std::string, int> bound;
    for (const auto& binding : b) {
      for (const auto& key : binding.keys) {
        if (find_setting(key) == nullptr) {
          throw std::logic_error("no setting '" + key + "' in the table to bind");
        }
        ++bound[key];
      }
    }
    for (const Setting& s : router_settings()) {
      if (bound[s.key] != 1) {
        throw std::logic_error("setting '" + s.key + "' is bound " + std::to_string(bound[s.key]) +
                               " times (src/app/setting_bindings.cpp)");
      }
    }
    return b;
  }();
  return all;
}

}  // namespace lemon
