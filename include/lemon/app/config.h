// Config: every setting of the lemonade-router daemon, from command-line
// flags, then LEMONADE_* environment variables, then defaults (issue #2 §1).
// Every flag Lemonade 9.4.1's `lemonade-server` passes to its router is
// accepted, so that CLI can launch this daemon unchanged.
//
// Thread-safety: value type; parse once in main.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/models/recipe_options.h"
#include "lemon/router/memory_policy.h"
#include "lemon/router/slot_limits.h"

namespace lemon {

struct Config {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string log_level = "info";
  SlotLimits limits;
  // The CLI/environment layer of load options, inheriting built-in defaults.
  RecipeOptions cli_options;
  std::string extra_models_dir;
  std::chrono::milliseconds load_timeout{600'000};
  std::chrono::milliseconds stop_grace{5'000};
  std::chrono::milliseconds drain_timeout{30'000};  // SIGTERM: in-flight requests may finish
  bool no_broadcast = false;  // accepted for compatibility; we never broadcast

  std::string cache_dir;      // LEMONADE_CACHE_DIR or ~/.cache/lemonade
  std::string hf_hub_cache;   // HF_HUB_CACHE, $HF_HOME/hub, or ~/.cache/huggingface/hub
  std::string resources_dir;  // where server_models.json lives

  std::size_t max_body_bytes = 64u << 20;
  int max_connections = 1024;
  // Slow and hostile clients (issue #11 §3): see net::ServerOptions.
  int max_connections_per_client = 256;
  std::size_t max_request_memory = 256u << 20;
  std::size_t max_response_bytes = 256u << 20;  // non-streaming backend replies
  int max_queued_per_model = 256;               // waiting for one model's load or slot
  int max_queued_total = 1024;                  // waiting, all models together
  // The pool (issue #13): see RouterConfig.
  int max_replicas = 1;
  std::chrono::milliseconds scale_up_after{2000};
  std::chrono::milliseconds scale_down_after{60000};
  std::optional<std::chrono::milliseconds> keep_alive;  // nullopt: forever
  std::chrono::milliseconds max_starvation{30000};
  // --default-model (issue #29 §3): loaded at start, and again after another
  // model displaced it once its type was idle for --default-model-delay.
  std::vector<std::string> default_models;
  std::chrono::milliseconds default_model_delay{30000};
  // Saved llama.cpp slots (issue #29 §1): nullopt is off; 0 is auto (a
  // tenth of the cache filesystem's free space, at most 32 GiB).
  std::optional<std::uint64_t> slot_cache_size = 0;
  long long slot_save_min_tokens = 1024;
  std::chrono::milliseconds slot_save_timeout{10000};
  // Memory admission (issue #13 §1); nullopt: --memory-budget off (slot
  // limits only).
  std::optional<BudgetRule> memory_budget = BudgetRule{};
  std::int64_t memory_margin = 256LL << 20;
  std::chrono::milliseconds memory_poll_interval{10000};
  std::chrono::milliseconds session_ttl{1'800'000};         // idle sessions end (issue #13 §4)
  std::chrono::milliseconds request_timeout{0};             // 0: none
  std::chrono::milliseconds backend_retry_delay{1000};      // first retry; 0: none (issue #14 §2)
  std::chrono::milliseconds stream_idle_timeout{0};         // 0: none
  std::chrono::milliseconds backend_idle_timeout{600'000};  // no byte from a backend; 0: none
  std::chrono::milliseconds stream_heartbeat{1000};         // ": ping" in a silent stream; 0: none
  long long max_prefill_tokens = 0;                         // 0: no limit
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{30'000};
  std::size_t body_min_rate = 1024;
  std::chrono::milliseconds keep_alive_timeout{60'000};
  std::chrono::milliseconds write_timeout{60'000};

  std::string api_key;  // --api-key / LEMONADE_API_KEY; empty: no authentication
  // --admin-api-key / LEMONADE_ADMIN_API_KEY: a key with every scope, and
  // api_key then has inference and read only (docs/auth.md).
  std::string admin_api_key;
  // The config file's `auth` section (checked): `keys` and `audit_log`
  // (issue #30 §2, http/api_keys.h); {} when absent.
  nlohmann::json auth = nlohmann::json::object();
  // The config file's `profiles` section (checked, router/profile_plan.h),
  // and --profile / LEMONADE_PROFILE: the one switched to at start ("" none).
  nlohmann::json profiles = nlohmann::json::object();
  std::string profile;
  // The config file's `remote` section ({"models", "health_interval",
  // "discovery_interval"}) and `remote_discovery` list (checked,
  // remote/remote_spec.h; issue #30 §3); null when absent.
  nlohmann::json remote;
  nlohmann::json remote_discovery;
  bool health_without_auth = false;
  bool metrics_public = false;  // --metrics-public / LEMONADE_METRICS_PUBLIC
  // LEMONADE_RUNTIME_DIR, else /tmp: the CLI's pid file and lock, and the
  // routers' shared port reservations (lemonade-router-ports/).
  std::string runtime_dir = "/tmp";
  std::vector<std::string> cors_origins;  // --cors-origins; "*" only when given
  // --ollama-port / LEMONADE_OLLAMA_PORT: also serve the routes on this port
  // (Ollama's clients look on 11434); nullopt: no second listener.
  std::optional<int> ollama_port;
  // --websocket-port / LEMONADE_WEBSOCKET_PORT (config.json websocket_port):
  // the WebSocket routes also on this port, reported as /health's
  // websocket_port; 0 for any free port; nullopt ("off"): none.
  std::optional<int> websocket_port = 0;

  int ready_fd = -1;  // --ready-fd: write "PORT\n" here once listening, then close it

  // Where each setting came from (issue #30 §1): key -> "default",
  // "defaults file", "config.json", "environment" or "flag"; and the
  // config.json read (it may not exist).
  std::map<std::string, std::string> setting_sources;
  // Each setting's value as text, as given or defaulted (compared by a reload).
  std::map<std::string, std::string> setting_values;
  std::string config_file;
};

// The outcome of parsing: a Config, or a request to exit (help/version was
// printed: exit code 0; invalid input: a one-line message and exit code 2).
struct ParsedConfig {
  Config config;
  bool exit_now = false;
  int exit_code = 0;
  std::string message;  // the one-line error for exit code 2
  std::string param;    // the config.json key it is about, when it names one
};

// Parses argv and the environment. Never exits the process itself.
// `config_json`, when given, stands for config.json's content (POST
// /internal/set checks a change before it writes it).
ParsedConfig parse_config(int argc, const char* const* argv,
                          const std::optional<nlohmann::json>& config_json = std::nullopt);
// The same over a command line held as strings (args[0] is the program).
ParsedConfig parse_config(const std::vector<std::string>& args,
                          const std::optional<nlohmann::json>& config_json = std::nullopt);

}  // namespace lemon
