#include "lemon/app/config.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "lemon/app/config_file.h"
#include "lemon/app/config_reloader.h"
#include "lemon/app/router_options.h"
#include "lemon/core/log.h"
#include "lemon/http/api_keys.h"
#include "lemon/models/recipe_options.h"
#include "lemon/remote/remote_spec.h"
#include "lemon/router/pool_policy.h"
#include "lemon/router/profile_plan.h"

namespace lemon {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string home_dir() {
  return env_or("HOME", "/tmp");
}

std::string default_cache_dir() {
  return env_or("LEMONADE_CACHE_DIR", home_dir() + "/.cache/lemonade");
}

std::string default_hf_hub_cache() {
  if (const char* hub = std::getenv("HF_HUB_CACHE"); hub != nullptr && *hub != '\0') {
    return hub;
  }
  if (const char* hf_home = std::getenv("HF_HOME"); hf_home != nullptr && *hf_home != '\0') {
    return std::string(hf_home) + "/hub";
  }
  return home_dir() + "/.cache/huggingface/hub";
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

// docs/configuration.md's table, from the options themselves (a test keeps
// the page and this in step).
void print_settings_markdown(const CLI::App& app) {
  auto cell = [](std::string text) {
    std::string out;
    for (char ch : text) {
      out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    }
    return out;
  };
  std::cout << "| key | flag | variable | a reload | what |\n|---|---|---|---|---|\n";
  for (const CLI::Option* opt : app.get_options()) {
    const std::string key = config_key_of_flag(opt->get_name());
    if (key.empty()) {
      continue;
    }
    std::cout << "| `" << key << "` | `" << opt->get_name() << "` | `" << opt->get_envname()
              << "` | " << (applies_live(key) ? "applies it" : "restart") << " | "
              << cell(opt->get_description()) << " |\n";
  }
}

// config.json's structured sections: read whole, not through a flag.
const std::vector<std::pair<const char*, nlohmann::json Config::*>>& structured_sections() {
  static const std::vector<std::pair<const char*, nlohmann::json Config::*>> sections = {
      {"auth", &Config::auth},
      {"profiles", &Config::profiles},
      {"remote", &Config::remote},
      {"remote_discovery", &Config::remote_discovery}};
  return sections;
}

// 127.0.0.0/8, ::1 and localhost: only this machine reaches them.
bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

// A refusal is one line on stderr: a control character a message quotes
// from the file (a key such as "back\nd") is written as its JSON escape.
std::string one_line(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (char ch : message) {
    if (static_cast<unsigned char>(ch) < 0x20) {
      const std::string quoted = nlohmann::json(std::string(1, ch)).dump();
      out.append(quoted, 1, quoted.size() - 2);  // without the quotes
    } else {
      out += ch;
    }
  }
  return out;
}

ParsedConfig fail(std::string_view message) {
  ParsedConfig p;
  p.exit_now = true;
  p.exit_code = 2;
  p.message = one_line(message);
  return p;
}

// Seconds and MiB as given (checked non-negative), in range for the integer
// they become: a value past 1e12 (three centuries of seconds, a million TiB)
// is the largest one, never an overflow.
std::chrono::milliseconds seconds_to_ms(double s) {
  return std::chrono::milliseconds(std::llround(std::clamp(s, 0.0, 1e12) * 1000.0));
}

std::int64_t mib_to_bytes(double mib) {
  return static_cast<std::int64_t>(std::clamp(mib, 0.0, 1e12) * 1024.0 * 1024.0);
}

}  // namespace

RouterOptionValues RouterOptionValues::defaults() {
  RecipeOptions d = RecipeOptions::defaults();
  RouterOptionValues v;
  v.ctx_size = d.ctx_size();
  v.parallel = d.int_value("parallel", 1);
  v.llamacpp = d.string_value("llamacpp_backend");
  v.sdcpp = d.string_value("sd-cpp_backend");
  v.whispercpp = d.string_value("whispercpp_backend");
  v.steps = d.raw().value("steps", 20);
  v.cfg_scale = d.raw().value("cfg_scale", 7.0);
  v.width = d.raw().value("width", 512);
  v.height = d.raw().value("height", 512);
  return v;
}

void add_load_options(CLI::App& app, RouterOptionValues& v) {
  app.add_option("--ctx-size", v.ctx_size, "Default context size")
      ->envname("LEMONADE_CTX_SIZE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--parallel", v.parallel,
                 "llama.cpp slots per model: requests served at once, each with --ctx-size "
                 "tokens (the KV cache holds parallel x ctx-size)")
      ->envname("LEMONADE_PARALLEL")
      ->check(CLI::Range(1, kMaxParallel))
      ->capture_default_str();
  app.add_option("--llamacpp", v.llamacpp, "llama.cpp backend: vulkan, rocm, metal or cpu")
      ->envname("LEMONADE_LLAMACPP")
      ->check(CLI::IsMember(valid_llamacpp_backends()))
      ->capture_default_str();
  app.add_option("--llamacpp-args", v.llamacpp_args, "Extra llama-server arguments")
      ->envname("LEMONADE_LLAMACPP_ARGS");
  app.add_option("--sdcpp", v.sdcpp, "stable-diffusion.cpp backend: cpu or rocm")
      ->envname("LEMONADE_SDCPP")
      ->check(CLI::IsMember(valid_sdcpp_backends()))
      ->capture_default_str();
  app.add_option("--whispercpp", v.whispercpp, "whisper.cpp backend: cpu, npu or vulkan")
      ->envname("LEMONADE_WHISPERCPP")
      ->check(CLI::IsMember(valid_whispercpp_backends()))
      ->capture_default_str();
  app.add_option("--steps", v.steps, "Image generation steps")
      ->envname("LEMONADE_STEPS")
      ->check(CLI::PositiveNumber);
  app.add_option("--cfg-scale", v.cfg_scale, "Image generation CFG scale")
      ->envname("LEMONADE_CFG_SCALE")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--width", v.width, "Image width")
      ->envname("LEMONADE_WIDTH")
      ->check(CLI::PositiveNumber);
  app.add_option("--height", v.height, "Image height")
      ->envname("LEMONADE_HEIGHT")
      ->check(CLI::PositiveNumber);
}

void add_router_options(CLI::App& app, RouterOptionValues& v) {
  add_load_options(app, v);
  app.add_option("--host", v.host, "Address to listen on (localhost = 127.0.0.1 and ::1)")
      ->envname("LEMONADE_HOST")
      ->capture_default_str();
  app.add_option("--port", v.port, "Port to listen on")
      ->envname("LEMONADE_PORT")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--log-level", v.log_level, "critical, error, warning, info, debug or trace")
      ->envname("LEMONADE_LOG_LEVEL")
      ->check(CLI::IsMember({"critical", "error", "warning", "info", "debug", "trace"}))
      ->capture_default_str();
  app.add_option("--max-loaded-models", v.max_models,
                 "Models per type: N for every type, or LLM [EMBEDDING [RERANKING [AUDIO "
                 "[IMAGE]]]]; -1 = unlimited")
      ->envname("LEMONADE_MAX_LOADED_MODELS")
      ->expected(1, 5)
      ->allow_extra_args(false);
  app.add_option("--extra-models-dir", v.extra_models_dir, "Directory of extra GGUF models")
      ->envname("LEMONADE_EXTRA_MODELS_DIR");
  app.add_option("--load-timeout", v.load_timeout_s, "Seconds a backend may take to become ready")
      ->envname("LEMONADE_LOAD_TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--stop-grace", v.stop_grace_s, "Seconds between SIGTERM and SIGKILL")
      ->envname("LEMONADE_STOP_GRACE")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--drain-timeout", v.drain_timeout_s,
                 "Seconds in-flight requests may take to finish after SIGTERM/SIGINT")
      ->envname("LEMONADE_DRAIN_TIMEOUT")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--no-broadcast", v.no_broadcast,
               "Accepted for compatibility: lemonade-router never broadcasts")
      ->envname("LEMONADE_NO_BROADCAST");
  app.add_option("--max-body-size", v.max_body_mb, "Largest request body in MiB")
      ->envname("LEMONADE_MAX_BODY_SIZE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-connections", v.max_connections,
                 "Concurrent client connections (an idle one holds no thread)")
      ->envname("LEMONADE_MAX_CONNECTIONS")
      ->check(CLI::Range(16, 65536))
      ->capture_default_str();
  app.add_option("--max-connections-per-client", v.max_connections_per_client,
                 "Concurrent connections from one client address (the longest idle is closed "
                 "first at the limit)")
      ->envname("LEMONADE_MAX_CONNECTIONS_PER_CLIENT")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option("--max-request-memory", v.max_request_memory_mb,
                 "MiB of request bodies held at once, all connections together (503 beyond)")
      ->envname("LEMONADE_MAX_REQUEST_MEMORY")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-response-size", v.max_response_mb,
                 "Largest non-streaming backend reply in MiB (502 beyond)")
      ->envname("LEMONADE_MAX_RESPONSE_SIZE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-queued-requests", v.max_queued_per_model,
                 "Requests that may wait for one model (its load or a free slot); 503 beyond")
      ->envname("LEMONADE_MAX_QUEUED_REQUESTS")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-queued-requests-total", v.max_queued_total,
                 "Requests that may wait for any model, all together; 503 beyond")
      ->envname("LEMONADE_MAX_QUEUED_REQUESTS_TOTAL")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-replicas", v.max_replicas,
                 "Backend processes one model may run at once; more start when requests queue")
      ->envname("LEMONADE_MAX_REPLICAS")
      ->check(CLI::Range(1, kMaxReplicas))
      ->capture_default_str();
  app.add_option("--scale-up-after", v.scale_up_after_s,
                 "Seconds requests wait for a busy model before another replica starts")
      ->envname("LEMONADE_SCALE_UP_AFTER")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--scale-down-after", v.scale_down_after_s,
                 "Seconds a replica may stay idle before it stops (never the last)")
      ->envname("LEMONADE_SCALE_DOWN_AFTER")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--keep-alive", v.keep_alive,
                 "How long an idle model stays loaded: seconds or a duration (5m, 1h); "
                 "-1 forever, 0 unload when idle")
      ->envname("LEMONADE_KEEP_ALIVE")
      ->check([](const std::string& text) {
        return parse_keep_alive(text) ? std::string() : "expected seconds or a duration (5m)";
      })
      ->capture_default_str();
  app.add_option("--default-model", v.default_models,
                 "Models loaded at start and loaded again, after another model displaced "
                 "them, once their type was idle for --default-model-delay (comma-separated, "
                 "one per type)")
      ->envname("LEMONADE_DEFAULT_MODEL");
  app.add_option("--default-model-delay", v.default_model_delay_s,
                 "Seconds a displaced default model waits for its type to be idle")
      ->envname("LEMONADE_DEFAULT_MODEL_DELAY")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--slot-cache-size", v.slot_cache_size,
                 "Disk for saved llama.cpp slots (KV caches kept across swaps and restarts): "
                 "auto (a tenth of the cache disk's free space, at most 32G), a size (8G) or off")
      ->envname("LEMONADE_SLOT_CACHE_SIZE")
      ->check([](const std::string& text) {
        auto rule = BudgetRule::parse(text);
        return text == "off" || text == "auto" || (rule && rule->ram_bytes)
                   ? std::string()
                   : "expected auto, a size (8G, 512M) or off";
      })
      ->capture_default_str();
  app.add_option("--slot-save-min-tokens", v.slot_save_min_tokens,
                 "A slot no session holds is saved at a planned stop only with this many tokens")
      ->envname("LEMONADE_SLOT_SAVE_MIN_TOKENS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--slot-save-timeout", v.slot_save_timeout_s,
                 "Seconds a stop may spend saving slots, and a start restoring them")
      ->envname("LEMONADE_SLOT_SAVE_TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-starvation", v.max_starvation_s,
                 "Seconds a load may wait while the model it would evict keeps serving")
      ->envname("LEMONADE_MAX_STARVATION")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--memory-budget", v.memory_budget,
                 "Memory the models may use per device: a percentage of what is available "
                 "plus what they hold (80%), an absolute size of RAM (24G), or off")
      ->envname("LEMONADE_MEMORY_BUDGET")
      ->check([](const std::string& text) {
        return text == "off" || BudgetRule::parse(text)
                   ? std::string()
                   : "expected a percentage (80%), a size (24G, 512M) or off";
      })
      ->capture_default_str();
  app.add_option("--memory-margin", v.memory_margin_mb,
                 "MiB a device keeps free: below it (another program took memory), idle models "
                 "there are unloaded")
      ->envname("LEMONADE_MEMORY_MARGIN")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--memory-poll-interval", v.memory_poll_interval_s,
                 "Seconds between readings of each device's free memory")
      ->envname("LEMONADE_MEMORY_POLL_INTERVAL")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  app.add_option("--session-ttl", v.session_ttl_s,
                 "Seconds a session may stay idle before it ends and its slot's cache is erased")
      ->envname("LEMONADE_SESSION_TTL")
      ->check(CLI::Range(0.05, 31'536'000.0))
      ->capture_default_str();
  app.add_option("--request-timeout", v.request_timeout_s,
                 "Seconds a non-streaming inference request may take end to end (0: no limit; 504)")
      ->envname("LEMONADE_REQUEST_TIMEOUT")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--backend-retry-delay", v.backend_retry_delay_s,
                 "Seconds before the first retry of a request whose backend refused or reset the "
                 "connection before answering; doubles for each of the 3 retries (0: no retry)")
      ->envname("LEMONADE_BACKEND_RETRY_DELAY")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  app.add_option("--stream-idle-timeout", v.stream_idle_timeout_s,
                 "Seconds a stream may go without a chunk from its backend (0: no limit)")
      ->envname("LEMONADE_STREAM_IDLE_TIMEOUT")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--backend-idle-timeout", v.backend_idle_timeout_s,
                 "Seconds an inference request may wait without a byte from its backend, "
                 "streaming or not (0: no limit; 504). A non-streaming llama-server reply sends "
                 "nothing until it is done, so this must exceed the longest generation")
      ->envname("LEMONADE_BACKEND_IDLE_TIMEOUT")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--stream-heartbeat", v.stream_heartbeat_s,
                 "Seconds a stream's backend may be silent (reading a long prompt) before the "
                 "client gets an SSE comment, \": ping\", and again as often (0: none)")
      ->envname("LEMONADE_STREAM_HEARTBEAT")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-prefill-tokens", v.max_prefill_tokens,
                 "Refuse (400 prompt_too_long) a chat or completion whose prompt has more tokens, "
                 "counted by the backend before it starts (0: no limit)")
      ->envname("LEMONADE_MAX_PREFILL_TOKENS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--header-timeout", v.header_timeout_s,
                 "Seconds a request's headers may take to arrive in all (408 beyond)")
      ->envname("LEMONADE_HEADER_TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--body-timeout", v.body_timeout_s,
                 "Seconds a request body may go without progress (408 beyond)")
      ->envname("LEMONADE_BODY_TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--body-min-rate", v.body_min_rate,
                 "Bytes a second a request body must average after its first 10 s (0: none)")
      ->envname("LEMONADE_BODY_MIN_RATE")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--keep-alive-timeout", v.keep_alive_timeout_s,
                 "Seconds an idle keep-alive connection is kept open")
      ->envname("LEMONADE_KEEP_ALIVE_TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--write-timeout", v.write_timeout_s,
                 "Seconds a client may accept none of its response before it is dropped")
      ->envname("LEMONADE_WRITE_TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  app.add_option("--api-key", v.api_key,
                 "A key with every scope (Authorization: Bearer <key>); docs/auth.md")
      ->envname("LEMONADE_API_KEY");
  app.add_option("--profile", v.profile,
                 "Switch to this profile of config.json's profiles once listening")
      ->envname("LEMONADE_PROFILE");
  app.add_option("--admin-api-key", v.admin_api_key,
                 "A key with every scope; --api-key then has inference and read only")
      ->envname("LEMONADE_ADMIN_API_KEY");
  app.add_flag("--health-without-auth", v.health_without_auth,
               "Let /health answer without the API key")
      ->envname("LEMONADE_HEALTH_WITHOUT_AUTH");
  app.add_flag("--allow-unauthenticated", v.allow_unauthenticated,
               "Listen on an address other machines reach (not loopback) without an API key")
      ->envname("LEMONADE_ALLOW_UNAUTHENTICATED");
  app.add_flag("--metrics-public", v.metrics_public,
               "Let /metrics answer without the API key (for a Prometheus scraper)")
      ->envname("LEMONADE_METRICS_PUBLIC");
  app.add_option("--ollama-port", v.ollama_port,
                 "Also serve the API on this port, where Ollama's clients look (11434 when "
                 "given without a value)")
      ->envname("LEMONADE_OLLAMA_PORT")
      ->expected(0, 1)
      ->check([](const std::string& text) {
        if (text.empty() || text == "off") {
          return std::string();
        }
        const bool digits = text.size() <= 5 && std::all_of(text.begin(), text.end(), [](char c) {
                              return c >= '0' && c <= '9';
                            });
        return digits && std::stoi(text) <= 65535 ? std::string()
                                                  : "expected a port from 0 to 65535";
      });
  app.add_option("--websocket-port", v.websocket_port,
                 "Also serve the WebSocket routes (/realtime, /logs/stream) on this port, which "
                 "/health reports as websocket_port: a port, auto (any free one) or off")
      ->envname("LEMONADE_WEBSOCKET_PORT")
      ->check([](const std::string& text) {
        if (text == "auto" || text == "off") {
          return std::string();
        }
        const bool digits =
            !text.empty() && text.size() <= 5 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        return digits && std::stoi(text) <= 65535 ? std::string()
                                                  : "expected a port from 0 to 65535, auto or off";
      })
      ->capture_default_str();
  app.add_option("--cors-origins", v.cors,
                 "Comma-separated origins allowed to call the API from a browser ('*' for any)")
      ->envname("LEMONADE_CORS_ORIGINS");

  app.add_option("--ready-fd", v.ready_fd,
                 "Descriptor to write the listening port to, then close (for launchers)")
      ->check(CLI::NonNegativeNumber)
      ->group("");
}

ParsedConfig parse_config(int argc, const char* const* argv,
                          const std::optional<nlohmann::json>& config_json) {
  ParsedConfig parsed;
  Config& c = parsed.config;
  RecipeOptions defaults = RecipeOptions::defaults();
  RouterOptionValues v = RouterOptionValues::defaults();

  CLI::App app("lemonade-router: serves local AI models behind one OpenAI-compatible API",
               "lemonade-router");
  app.set_version_flag("-v,--version", std::string("lemonade-router ") + LEMON_ROUTER_VERSION +
                                           " (Lemonade API " + LEMON_API_VERSION + ")");
  add_router_options(app, v);
  bool settings_markdown = false;
  app.add_flag("--settings-markdown", settings_markdown,
               "Print the table of settings (docs/configuration.md) and exit")
      ->group("");

  // config.json and the distribution's defaults (issue #30 §1), under the
  // variables and flags.
  c.config_file = (config_dir() / "config.json").string();
  for (const auto& [file, origin] :
       {std::pair{distro_defaults_file(), std::string("defaults file")},
        std::pair{std::filesystem::path(c.config_file), std::string("config.json")}}) {
    auto values = config_json && origin == "config.json" ? Result<nlohmann::json>(*config_json)
                                                         : read_config_file(file);
    if (!values.ok()) {
      return fail(values.error().message());
    }
    for (const auto& [section, field] : structured_sections()) {
      if (auto it = values->find(section); it != values->end() && !it->is_null()) {
        c.*field = *it;  // a later file's wins
        c.setting_sources[section] = origin;
      }
    }
    if (Status applied = apply_config_file(app, *values, file.string(), c.setting_sources);
        !applied.ok()) {
      ParsedConfig failed = fail(applied.error().message());
      failed.param = applied.error().param();
      return failed;
    }
    for (auto& [key, from] : c.setting_sources) {
      if (from == file.string()) {
        from = origin;
      }
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    parsed.exit_now = true;
    return parsed;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    parsed.exit_now = true;
    return parsed;
  } catch (const CLI::CallForVersion&) {
    std::cout << app.version() << "\n";
    parsed.exit_now = true;
    return parsed;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    return fail(what);
  }

  if (settings_markdown) {
    print_settings_markdown(app);
    parsed.exit_now = true;
    return parsed;
  }
  for (const CLI::Option* opt : app.get_options()) {
    const std::string key = config_key_of_flag(opt->get_name());
    if (key.empty()) {
      continue;
    }
    std::string value;
    if (opt->count() > 0) {
      for (const auto& r : opt->results()) {
        value += (value.empty() ? "" : " ") + r;
      }
    } else {
      value = opt->get_default_str();
    }
    c.setting_values[key] = value;
    if (opt->count() > 0) {
      bool on_command_line = false;
      for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        on_command_line =
            on_command_line || arg == opt->get_name() || arg.starts_with(opt->get_name() + "=");
      }
      c.setting_sources[key] = on_command_line ? "flag" : "environment";
    } else if (!c.setting_sources.contains(key)) {
      c.setting_sources[key] = "default";
    }
  }

  for (const auto& [section, field] : structured_sections()) {
    c.setting_values[section] = (c.*field).dump();
    if (!c.setting_sources.contains(section)) {
      c.setting_sources[section] = "default";
    }
  }

  std::string joined;
  for (const auto& m : v.max_models) {
    joined += m + " ";
  }
  auto limits = SlotLimits::parse(joined);
  if (!limits.ok()) {
    return fail(limits.error().message());
  }
  c.limits = *limits;

  nlohmann::json layer = {{"ctx_size", v.ctx_size},
                          {"parallel", v.parallel},
                          {"llamacpp_backend", v.llamacpp},
                          {"llamacpp_args", v.llamacpp_args},
                          {"sd-cpp_backend", v.sdcpp},
                          {"whispercpp_backend", v.whispercpp},
                          {"steps", v.steps},
                          {"cfg_scale", v.cfg_scale},
                          {"width", v.width},
                          {"height", v.height}};
  auto cli = RecipeOptions::from_json("", layer);
  if (!cli.ok()) {
    return fail(cli.error().message());
  }
  c.cli_options = cli->inherit(defaults);
  c.load_timeout = seconds_to_ms(v.load_timeout_s);
  c.stop_grace = seconds_to_ms(v.stop_grace_s);
  c.drain_timeout = seconds_to_ms(v.drain_timeout_s);
  c.max_body_bytes = static_cast<std::size_t>(mib_to_bytes(v.max_body_mb));
  c.max_connections_per_client = v.max_connections_per_client;
  c.max_request_memory = static_cast<std::size_t>(mib_to_bytes(v.max_request_memory_mb));
  c.max_response_bytes = static_cast<std::size_t>(mib_to_bytes(v.max_response_mb));
  c.max_queued_per_model = v.max_queued_per_model;
  c.max_queued_total = v.max_queued_total;
  c.header_timeout = seconds_to_ms(v.header_timeout_s);
  c.request_timeout = seconds_to_ms(v.request_timeout_s);
  c.backend_retry_delay = seconds_to_ms(v.backend_retry_delay_s);
  c.max_replicas = v.max_replicas;
  c.scale_up_after = seconds_to_ms(v.scale_up_after_s);
  c.scale_down_after = seconds_to_ms(v.scale_down_after_s);
  if (auto ka = parse_keep_alive(v.keep_alive); ka && ka->count() >= 0) {
    c.keep_alive = *ka;
  }
  c.max_starvation = seconds_to_ms(v.max_starvation_s);
  c.default_model_delay = seconds_to_ms(v.default_model_delay_s);
  if (v.slot_cache_size == "off") {
    c.slot_cache_size = std::nullopt;
  } else if (auto rule = BudgetRule::parse(v.slot_cache_size); rule && rule->ram_bytes) {
    c.slot_cache_size = static_cast<std::uint64_t>(*rule->ram_bytes);
  } else {
    c.slot_cache_size = 0;  // auto
  }
  c.slot_save_min_tokens = v.slot_save_min_tokens;
  c.slot_save_timeout = seconds_to_ms(v.slot_save_timeout_s);
  std::stringstream default_names(v.default_models);
  for (std::string name; std::getline(default_names, name, ',');) {
    auto start = name.find_first_not_of(" \t");
    auto end = name.find_last_not_of(" \t");
    if (start != std::string::npos &&
        std::find(c.default_models.begin(), c.default_models.end(),
                  name.substr(start, end - start + 1)) == c.default_models.end()) {
      c.default_models.push_back(name.substr(start, end - start + 1));
    }
  }
  c.memory_budget = v.memory_budget == "off" ? std::nullopt : BudgetRule::parse(v.memory_budget);
  c.memory_margin = mib_to_bytes(v.memory_margin_mb);
  c.memory_poll_interval = seconds_to_ms(v.memory_poll_interval_s);
  c.session_ttl = seconds_to_ms(v.session_ttl_s);
  c.stream_idle_timeout = seconds_to_ms(v.stream_idle_timeout_s);
  c.backend_idle_timeout = seconds_to_ms(v.backend_idle_timeout_s);
  c.stream_heartbeat = seconds_to_ms(v.stream_heartbeat_s);
  c.max_prefill_tokens = v.max_prefill_tokens;
  c.body_timeout = seconds_to_ms(v.body_timeout_s);
  c.body_min_rate = static_cast<std::size_t>(std::clamp(v.body_min_rate, 0.0, 1e15));
  c.keep_alive_timeout = seconds_to_ms(v.keep_alive_timeout_s);
  c.write_timeout = seconds_to_ms(v.write_timeout_s);
  std::stringstream origins(v.cors);
  for (std::string origin; std::getline(origins, origin, ',');) {
    auto start = origin.find_first_not_of(" \t");
    auto end = origin.find_last_not_of(" \t/");
    if (start != std::string::npos) {
      c.cors_origins.push_back(origin.substr(start, end - start + 1));
    }
  }
  c.host = v.host;
  c.port = v.port;
  auto keys = http::build_key_ring(c.auth, v.api_key, v.admin_api_key);
  if (!keys.ok()) {
    return fail(c.setting_sources.contains("auth")
                    ? c.setting_sources["auth"] + ": " + keys.error().message()
                    : keys.error().message());
  }
  if (!is_loopback_host(c.host) && keys->empty() && !v.allow_unauthenticated) {
    // Deny by default off loopback (issue #30 §2).
    return fail("refusing to listen on " + c.host +
                " without an API key: set --api-key (LEMONADE_API_KEY) or auth.keys in "
                "config.json, or pass --allow-unauthenticated to let anyone who reaches it use it");
  }
  c.log_level = v.log_level;
  c.extra_models_dir = v.extra_models_dir;
  c.no_broadcast = v.no_broadcast;
  c.max_connections = v.max_connections;
  auto profiles = parse_profiles(c.profiles);
  if (!profiles.ok()) {
    return fail(c.setting_sources["profiles"] + ": " + profiles.error().message());
  }
  c.profile = v.profile;  // checked at start only (a reload may drop the profile)
  if (auto remote = remote::parse_remote_settings(c.remote, nullptr); !remote.ok()) {
    return fail(c.setting_sources["remote"] + ": " + remote.error().message());
  }
  if (auto discovery = remote::parse_remote_settings(nullptr, c.remote_discovery);
      !discovery.ok()) {
    return fail(c.setting_sources["remote_discovery"] + ": " + discovery.error().message());
  }
  c.api_key = v.api_key;
  c.admin_api_key = v.admin_api_key;
  c.health_without_auth = v.health_without_auth;
  c.metrics_public = v.metrics_public;
  if (const char* dir = std::getenv("LEMONADE_RUNTIME_DIR"); dir != nullptr && *dir != '\0') {
    c.runtime_dir = dir;
  }
  if (v.ollama_port != "off") {
    c.ollama_port = v.ollama_port.empty() ? 11434 : std::stoi(v.ollama_port);
  }
  if (v.websocket_port == "off") {
    c.websocket_port.reset();
  } else {
    c.websocket_port = v.websocket_port == "auto" ? 0 : std::stoi(v.websocket_port);
  }
  c.ready_fd = v.ready_fd;
  c.cache_dir = default_cache_dir();
  c.hf_hub_cache = default_hf_hub_cache();
  c.resources_dir = default_resources_dir();
  if (!c.extra_models_dir.empty() && !std::filesystem::is_directory(c.extra_models_dir)) {
    return fail("--extra-models-dir: '" + c.extra_models_dir + "' is not a directory");
  }
  return parsed;
}

ParsedConfig parse_config(const std::vector<std::string>& args,
                          const std::optional<nlohmann::json>& config_json) {
  std::vector<const char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) {
    argv.push_back(a.c_str());
  }
  argv.push_back(nullptr);
  return parse_config(static_cast<int>(args.size()), argv.data(), config_json);
}

}  // namespace lemon
