#include "lemon/options/router_settings.h"

#include <algorithm>
#include <cctype>

#include <CLI/CLI.hpp>

#include "lemon/core/device_bytes.h"
#include "lemon/core/duration_text.h"
#include "lemon/core/load_option_defaults.h"

namespace lemon {
namespace {

// One row as the table writes it: a flag, its shape, its default and its
// help; the key and the variable follow from the flag (router_settings.h).
class Row {
 public:
  Row(SettingShape shape, std::string flag, std::string default_value, std::string help) {
    s_.shape = shape;
    s_.flag = std::move(flag);
    s_.default_value = std::move(default_value);
    s_.help = std::move(help);
    std::string name = s_.flag.substr(2);
    s_.key = name;
    std::replace(s_.key.begin(), s_.key.end(), '-', '_');
    s_.variable = "LEMONADE_" + s_.key;
    std::transform(s_.variable.begin(), s_.variable.end(), s_.variable.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  }
  // A key in one of Lemonade's sections ("llamacpp.args").
  Row& key(std::string key) {
    s_.key = std::move(key);
    return *this;
  }
  Row& seconds() {
    s_.unit = SettingUnit::kSeconds;
    return *this;
  }
  Row& mebibytes() {
    s_.unit = SettingUnit::kMebibytes;
    return *this;
  }
  Row& check(CLI::Validator validator) {
    s_.check = std::make_shared<const CLI::Validator>(std::move(validator));
    return *this;
  }
  Row& live() {
    s_.live = true;
    return *this;
  }
  // Another name the flag answers to.
  Row& alias(std::string flag) {
    s_.alias = std::move(flag);
    return *this;
  }
  Row& default_not_shown() {
    s_.show_default = false;
    return *this;
  }
  // Also a per-model load option, `recipe_key` in RecipeOptions; its
  // default is the built-in one (load_option_defaults.h).
  Row& load_option(std::string recipe_key) {
    s_.load_option = std::move(recipe_key);
    return *this;
  }
  // A flag for launchers, no setting.
  Row& launcher_only() {
    s_.is_setting = false;
    s_.variable.clear();
    return *this;
  }
  operator Setting() const { return s_; }  // a row of the table as written

 private:
  Setting s_;
};

Row integer(std::string flag, std::string default_value, std::string help) {
  return {SettingShape::kInteger, std::move(flag), std::move(default_value), std::move(help)};
}
Row long_integer(std::string flag, std::string default_value, std::string help) {
  return {SettingShape::kLongInteger, std::move(flag), std::move(default_value), std::move(help)};
}
Row number(std::string flag, std::string default_value, std::string help) {
  return {SettingShape::kNumber, std::move(flag), std::move(default_value), std::move(help)};
}
Row text(std::string flag, std::string default_value, std::string help) {
  return {SettingShape::kText, std::move(flag), std::move(default_value), std::move(help)};
}
Row list(std::string flag, std::string help) {
  return Row{SettingShape::kList, std::move(flag), "", std::move(help)}.default_not_shown();
}
Row on_off(std::string flag, std::string help) {
  return Row{SettingShape::kSwitch, std::move(flag), "false", std::move(help)}.default_not_shown();
}
// The path of one backend's binary (Lemonade 11's `<recipe>.<backend>_bin`).
Row bin_row(std::string flag, std::string key, const std::string& binary) {
  return text(std::move(flag), "builtin",
              "Path of the " + binary +
                  " this backend runs; builtin, latest or a version tag: found as usual")
      .key(std::move(key))
      .default_not_shown();
}

// config.json's sections: no flag, no variable; `empty` is their value
// when no file has them.
Setting section(std::string key, std::string empty) {
  Setting s;
  s.key = std::move(key);
  s.shape = SettingShape::kSection;
  s.default_value = std::move(empty);
  s.live = true;
  return s;
}

// A check of text that CLI11 shows no description for.
CLI::Validator text_check(std::string (*check)(const std::string&)) {
  return CLI::Validator([check](std::string& text) { return check(text); }, "").non_modifying();
}

std::string ctx_size_check(const std::string& text) {
  const bool digits =
      !text.empty() && text.size() <= 10 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  return text == "auto" || text == "-1" ||
                 (digits && std::stoll(text) >= 1 && std::stoll(text) <= 2147483647)
             ? std::string()
             : "expected a positive integer or auto";
}

std::string keep_alive_check(const std::string& text) {
  return parse_keep_alive(text) ? std::string() : "expected seconds or a duration (5m)";
}

std::string slot_cache_size_check(const std::string& text) {
  auto rule = BudgetRule::parse(text);
  return text == "off" || text == "auto" || (rule && rule->ram_bytes)
             ? std::string()
             : "expected auto, a size (8G, 512M) or off";
}

std::string memory_budget_check(const std::string& text) {
  return text == "off" || BudgetRule::parse(text)
             ? std::string()
             : "expected a percentage (80%), a size (24G, 512M) or off";
}

std::string ollama_port_check(const std::string& text) {
  if (text.empty() || text == "off") {
    return std::string();
  }
  const bool digits = text.size() <= 5 && std::all_of(text.begin(), text.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
  return digits && std::stoi(text) <= 65535 ? std::string() : "expected a port from 0 to 65535";
}

std::string websocket_port_check(const std::string& text) {
  if (text == "auto" || text == "off") {
    return std::string();
  }
  const bool digits =
      !text.empty() && text.size() <= 5 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  return digits && std::stoi(text) <= 65535 ? std::string()
                                            : "expected a port from 0 to 65535, auto or off";
}

std::vector<Setting> build_table() {
  return {
      // The load options: also each model's (POST /load, recipe_options.json).
      text("--ctx-size", "",
           "Default context size in tokens per slot, or auto: the largest that fits the "
           "device's memory budget beside the models that stay loaded (llama.cpp)")
          .load_option("ctx_size")
          .check(text_check(ctx_size_check))
          .live(),
      integer("--parallel", "",
              "llama.cpp slots per model: requests served at once, each with --ctx-size "
              "tokens (the KV cache holds parallel x ctx-size)")
          .load_option("parallel")
          .check(CLI::Range(1, kMaxParallel))
          .live(),
      text("--llamacpp", "", "llama.cpp backend: vulkan, rocm, metal or cpu")
          .key("llamacpp.backend")
          .load_option("llamacpp_backend")
          .check(CLI::IsMember(valid_llamacpp_backends()))
          .live(),
      text("--llamacpp-args", "", "Extra llama-server arguments")
          .key("llamacpp.args")
          .load_option("llamacpp_args")
          .default_not_shown()
          .live(),
      text("--sdcpp", "", "stable-diffusion.cpp backend: cpu or rocm")
          .key("sdcpp.backend")
          .load_option("sd-cpp_backend")
          .check(CLI::IsMember(valid_sdcpp_backends()))
          .live(),
      text("--whispercpp", "", "whisper.cpp backend: cpu, npu or vulkan")
          .key("whispercpp.backend")
          .load_option("whispercpp_backend")
          .check(CLI::IsMember(valid_whispercpp_backends()))
          .live(),
      integer("--steps", "", "Image generation steps")
          .key("sdcpp.steps")
          .load_option("steps")
          .check(CLI::PositiveNumber)
          .default_not_shown()
          .live(),
      number("--cfg-scale", "", "Image generation CFG scale")
          .key("sdcpp.cfg_scale")
          .load_option("cfg_scale")
          .check(CLI::NonNegativeNumber)
          .default_not_shown()
          .live(),
      integer("--width", "", "Image width")
          .key("sdcpp.width")
          .load_option("width")
          .check(CLI::PositiveNumber)
          .default_not_shown()
          .live(),
      integer("--height", "", "Image height")
          .key("sdcpp.height")
          .load_option("height")
          .check(CLI::PositiveNumber)
          .default_not_shown()
          .live(),

      // Lemonade 11's backend binaries: a path wins over the search for the
      // backend's binary (binary_locator.h); builtin, latest or a version
      // tag keep the search.
      bin_row("--llamacpp-cpu-bin", "llamacpp.cpu_bin", "llama-server"),
      bin_row("--llamacpp-cuda-bin", "llamacpp.cuda_bin", "llama-server"),
      bin_row("--llamacpp-rocm-bin", "llamacpp.rocm_bin", "llama-server"),
      bin_row("--llamacpp-vulkan-bin", "llamacpp.vulkan_bin", "llama-server"),
      bin_row("--whispercpp-cpu-bin", "whispercpp.cpu_bin", "whisper-server"),
      bin_row("--whispercpp-npu-bin", "whispercpp.npu_bin", "whisper-server"),
      bin_row("--sdcpp-cpu-bin", "sdcpp.cpu_bin", "sd-server"),
      bin_row("--sdcpp-cuda-bin", "sdcpp.cuda_bin", "sd-server"),
      bin_row("--sdcpp-rocm-bin", "sdcpp.rocm_bin", "sd-server"),
      bin_row("--sdcpp-vulkan-bin", "sdcpp.vulkan_bin", "sd-server"),
      text("--llamacpp-prefer-system", "true",
           "Whether a llama-server on PATH wins over the one installed in the cache "
           "(true or false)")
          .key("llamacpp.prefer_system")
          .check(CLI::IsMember({"true", "false"})),

      text("--host", "127.0.0.1", "Address to listen on (localhost = 127.0.0.1 and ::1)"),
      integer("--port", "8000", "Port to listen on").check(CLI::Range(0, 65535)),
      text("--log-level", "info", "critical, error, warning, info, debug or trace")
          .check(CLI::IsMember({"critical", "error", "warning", "info", "debug", "trace"}))
          .live(),
      Row(SettingShape::kWords, "--max-loaded-models", "1",
          "Models per type: N for every type, or LLM [EMBEDDING [RERANKING [AUDIO "
          "[IMAGE]]]]; -1 = unlimited")
          .default_not_shown()
          .live(),
      text("--extra-models-dir", "",
           "Directory of extra GGUF models (also --models-dir, llama-server's name for it)")
          .alias("--models-dir")
          .default_not_shown()
          .live(),
      text("--models-preset", "",
           "llama-server's preset file (.ini): each section a preset of ours, named after it")
          .default_not_shown(),
      on_off("--no-models-autoload",
             "A request for a model that is not loaded fails instead of loading it (llama-server's "
             "--no-models-autoload; a request's ?autoload=true|false wins)")
          .live(),
      number("--load-timeout", "600",
             "Seconds a backend may take to become ready, progress or not (the hard cap)")
          .seconds()
          .check(CLI::PositiveNumber),
      number("--load-stall-timeout", "60",
             "Seconds a backend that reports its load progress (llama-server) may go without a "
             "sign of progress before the load fails; 0: no stall bound")
          .seconds()
          .check(CLI::NonNegativeNumber),
      number("--stop-grace", "5", "Seconds between SIGTERM and SIGKILL")
          .seconds()
          .check(CLI::NonNegativeNumber),
      number("--drain-timeout", "30",
             "Seconds in-flight requests may take to finish after SIGTERM/SIGINT")
          .seconds()
          .check(CLI::NonNegativeNumber),
      on_off("--offline",
             "Download nothing: pulls, registry searches and update checks answer from what "
             "is cached"),
      text("--default-model-source", "huggingface",
           "The registry a search or a variants listing without a source asks: huggingface "
           "(modelscope, Lemonade's other one, is refused as unsupported)")
          .check(CLI::IsMember({"huggingface", "modelscope"})),
      // config.json's models_dir (Lemonade 11's name for the model cache);
      // the flag --models-dir is llama-server's name for --extra-models-dir.
      text("--models-cache-dir", "auto",
           "Folder models are downloaded to (the Hugging Face hub cache): auto (HF_HUB_CACHE, "
           "$HF_HOME/hub or ~/.cache/huggingface/hub) or a folder")
          .key("models_dir"),
      on_off("--no-broadcast",
             "Send no beacon: by default the router tells local clients its port every 2 s, "
             "one UDP datagram to 127.0.0.1:--beacon-port (Lemonade 11's discovery)"),
      integer("--beacon-port", "13305",
              "UDP port on 127.0.0.1 the beacon goes to (Lemonade 11's clients listen on 13305)")
          .check(CLI::Range(1, 65535)),
      number("--max-body-size", "64", "Largest request body in MiB")
          .mebibytes()
          .check(CLI::PositiveNumber),
      integer("--max-connections", "1024",
              "Concurrent client connections (an idle one holds no thread)")
          .check(CLI::Range(16, 65536)),
      integer("--max-connections-per-client", "256",
              "Concurrent connections from one client address (the longest idle is closed "
              "first at the limit)")
          .check(CLI::Range(1, 65536)),
      number("--max-request-memory", "256",
             "MiB of request bodies held at once, all connections together (503 beyond)")
          .mebibytes()
          .check(CLI::PositiveNumber),
      number("--max-response-size", "256",
             "Largest non-streaming backend reply in MiB (502 beyond)")
          .mebibytes()
          .check(CLI::PositiveNumber)
          .live(),
      integer("--max-queued-requests", "256",
              "Requests that may wait for one model (its load or a free slot); 503 beyond")
          .check(CLI::Range(1, 1 << 20)),
      integer("--max-queued-requests-total", "1024",
              "Requests that may wait for any model, all together; 503 beyond")
          .check(CLI::Range(1, 1 << 20)),
      integer("--max-replicas", "1",
              "Backend processes one model may run at once; more start when requests queue")
          .check(CLI::Range(1, kMaxReplicas)),
      number("--scale-up-after", "2",
             "Seconds requests wait for a busy model before another replica starts")
          .seconds()
          .check(CLI::NonNegativeNumber)
          .live(),
      number("--scale-down-after", "60",
             "Seconds a replica may stay idle before it stops (never the last)")
          .seconds()
          .check(CLI::NonNegativeNumber)
          .live(),
      text("--keep-alive", "-1",
           "How long an idle model stays loaded: seconds or a duration (5m, 1h); "
           "-1 forever, 0 unload when idle")
          .check(text_check(keep_alive_check))
          .live(),
      list("--default-model",
           "Models loaded at start and loaded again, after another model displaced "
           "them, once their type was idle for --default-model-delay (comma-separated, "
           "one per type)"),
      number("--default-model-delay", "30",
             "Seconds a displaced default model waits for its type to be idle")
          .seconds()
          .check(CLI::NonNegativeNumber)
          .live(),
      text("--slot-cache-size", "auto",
           "Disk for saved llama.cpp slots (KV caches kept across swaps and restarts): "
           "auto (a tenth of the cache disk's free space, at most 32G), a size (8G) or off")
          .check(text_check(slot_cache_size_check)),
      long_integer("--slot-save-min-tokens", "1024",
                   "A slot no session holds is saved at a planned stop only with this many tokens")
          .check(CLI::NonNegativeNumber),
      number("--slot-save-timeout", "10",
             "Seconds a stop may spend saving slots, and a start restoring them")
          .seconds()
          .check(CLI::PositiveNumber),
      number("--max-starvation", "30",
             "Seconds a load may wait while the model it would evict keeps serving")
          .seconds()
          .check(CLI::NonNegativeNumber)
          .live(),
      text("--memory-budget", "80%",
           "Memory the models may use per device: a percentage of what is available "
           "plus what they hold (80%), an absolute size of RAM (24G), or off")
          .check(text_check(memory_budget_check))
          .live(),
      number("--memory-margin", "256",
             "MiB a device keeps free: below it (another program took memory), idle models "
             "there are unloaded")
          .mebibytes()
          .check(CLI::NonNegativeNumber)
          .live(),
      on_off("--auto-evict",
             "When a GPU's memory in use reaches --auto-evict-threshold-pct, unload the least "
             "recently used idle model (Lemonade 11's auto_evict)")
          .live(),
      number("--auto-evict-threshold-pct", "0.9",
             "Fraction of a GPU's memory in use that --auto-evict counts as pressure")
          .check(CLI::Range(0.01, 1.0))
          .live(),
      number("--memory-poll-interval", "10",
             "Seconds between readings of each device's free memory")
          .seconds()
          .check(CLI::Range(0.05, 3600.0)),
      number("--session-ttl", "1800",
             "Seconds a session may stay idle before it ends and its slot's cache is erased")
          .seconds()
          .check(CLI::Range(0.05, 31'536'000.0)),
      number("--request-timeout", "0",
             "Seconds a non-streaming inference request may take end to end (0: no limit; 504)")
          .seconds()
          .check(CLI::NonNegativeNumber)
          .live(),
      number("--backend-retry-delay", "1",
             "Seconds before the first retry of a request whose backend refused or reset the "
             "connection before answering; doubles for each of the 3 retries (0: no retry)")
          .seconds()
          .check(CLI::Range(0.0, 60.0))
          .live(),
      number("--stream-idle-timeout", "0",
             "Seconds a stream may go without a chunk from its backend (0: no limit)")
          .seconds()
          .check(CLI::NonNegativeNumber)
          .live(),
      number("--backend-idle-timeout", "600",
             "Seconds an inference request may wait without a byte from its backend, "
             "streaming or not (0: no limit; 504). A non-streaming llama-server reply sends "
             "nothing until it is done, so this must exceed the longest generation")
          .seconds()
          .check(CLI::NonNegativeNumber)
          .live(),
      number("--stream-heartbeat", "1",
             "Seconds a stream's backend may be silent (reading a long prompt) before the "
             "client gets an SSE comment, \": ping\", and again as often (0: none)")
          .seconds()
          .check(CLI::NonNegativeNumber)
          .live(),
      long_integer("--max-prefill-tokens", "0",
                   "Refuse (400 prompt_too_long) a chat or completion whose prompt has more "
                   "tokens, counted by the backend before it starts (0: no limit)")
          .check(CLI::NonNegativeNumber)
          .live(),
      number("--header-timeout", "10",
             "Seconds a request's headers may take to arrive in all (408 beyond)")
          .seconds()
          .check(CLI::PositiveNumber),
      number("--body-timeout", "30", "Seconds a request body may go without progress (408 beyond)")
          .seconds()
          .check(CLI::PositiveNumber),
      number("--body-min-rate", "1024",
             "Bytes a second a request body must average after its first 10 s (0: none)")
          .check(CLI::NonNegativeNumber),
      number("--keep-alive-timeout", "60", "Seconds an idle keep-alive connection is kept open")
          .seconds()
          .check(CLI::PositiveNumber),
      number("--write-timeout", "60",
             "Seconds a client may accept none of its response before it is dropped")
          .seconds()
          .check(CLI::PositiveNumber),

      text("--api-key", "", "A key with every scope (Authorization: Bearer <key>); docs/auth.md")
          .default_not_shown()
          .live(),
      text("--profile", "", "Switch to this profile of config.json's profiles once listening")
          .default_not_shown(),
      text("--admin-api-key", "",
           "A key with every scope; --api-key then has inference and read only")
          .default_not_shown()
          .live(),
      on_off("--health-without-auth", "Let /health answer without the API key"),
      on_off("--allow-unauthenticated",
             "Listen on an address other machines reach (not loopback) without an API key"),
      on_off("--metrics-public",
             "Let /metrics answer without the API key (for a Prometheus scraper)"),
      Row(SettingShape::kOptionalValue, "--ollama-port", "off",
          "Also serve the API on this port, where Ollama's clients look (11434 when "
          "given without a value)")
          .check(text_check(ollama_port_check))
          .default_not_shown(),
      text("--websocket-port", "auto",
           "Also serve the WebSocket routes (/realtime, /logs/stream) on this port, which "
           "/health reports as websocket_port: a port, auto (any free one) or off")
          .check(text_check(websocket_port_check)),
      list("--cors-origins",
           "Comma-separated origins allowed to call the API from a browser ('*' for any)")
          .live(),

      integer("--ready-fd", "-1",
              "Descriptor to write the listening port to, then close (for launchers)")
          .check(CLI::NonNegativeNumber)
          .default_not_shown()
          .launcher_only(),

      section("auth", "{}"),
      section("profiles", "{}"),
      section("remote", "null"),
      section("remote_discovery", "null"),
  };
}

}  // namespace

const std::vector<Setting>& router_settings() {
  static const std::vector<Setting> table = build_table();
  return table;
}

const Setting* find_setting(std::string_view key) {
  for (const Setting& s : router_settings()) {
    if (s.key == key) {
      return &s;
    }
  }
  return nullptr;
}

}  // namespace lemon
