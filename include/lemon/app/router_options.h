// RouterOptionValues and add_router_options(): the daemon's command-line
// options, registered on any CLI11 app. lemonade-router parses them into a
// Config; lemonade-server's `serve` and `run` register the same options so
// that their help, checks and pass-through to the router never drift apart.
//
// Thread-safety: plain values; register and parse on one thread.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace lemon {

struct RouterOptionValues {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string log_level = "info";
  std::vector<std::string> max_models = {"1"};
  int ctx_size = 4096;
  int parallel = 1;
  std::string llamacpp;
  std::string llamacpp_args;
  std::string sdcpp;
  std::string whispercpp;
  int steps = 20;
  double cfg_scale = 7.0;
  int width = 512;
  int height = 512;
  std::string extra_models_dir;
  double load_timeout_s = 600.0;
  double stop_grace_s = 5.0;
  double drain_timeout_s = 30.0;
  bool no_broadcast = false;
  double max_body_mb = 64.0;
  int max_connections = 1024;
  int max_connections_per_client = 256;
  double max_request_memory_mb = 256.0;
  double max_response_mb = 256.0;
  int max_queued_per_model = 256;
  int max_queued_total = 1024;
  int max_replicas = 1;
  double scale_up_after_s = 2.0;
  double scale_down_after_s = 60.0;
  std::string keep_alive = "-1";
  double max_starvation_s = 30.0;
  std::string default_models;  // comma-separated
  double default_model_delay_s = 30.0;
  std::string slot_cache_size = "auto";  // "auto", "off" or a size (issue #29 §1)
  long long slot_save_min_tokens = 1024;
  double slot_save_timeout_s = 10.0;
  std::string memory_budget = "80%";  // "off", a percentage or a size (BudgetRule)
  double memory_margin_mb = 256.0;
  double memory_poll_interval_s = 10.0;
  double session_ttl_s = 1800.0;
  double request_timeout_s = 0.0;
  double backend_retry_delay_s = 1.0;
  double stream_idle_timeout_s = 0.0;
  double backend_idle_timeout_s = 600.0;
  double stream_heartbeat_s = 1.0;
  long long max_prefill_tokens = 0;
  double header_timeout_s = 10.0;
  double body_timeout_s = 30.0;
  double body_min_rate = 1024.0;
  double keep_alive_timeout_s = 60.0;
  double write_timeout_s = 60.0;
  std::string api_key;
  std::string admin_api_key;
  std::string profile;
  bool health_without_auth = false;
  bool metrics_public = false;
  bool allow_unauthenticated = false;
  std::string cors;
  // --ollama-port: "off" (not given), "" (given without a value: 11434) or a port.
  std::string ollama_port = "off";
  // --websocket-port: "auto" (any free port), "off" or a port.
  std::string websocket_port = "auto";
  int ready_fd = -1;

  // Defaults, with the load-option defaults of RecipeOptions::defaults().
  static RouterOptionValues defaults();
};

// Adds the options that are also per-model load options (--ctx-size,
// --parallel, --llamacpp, --llamacpp-args, --sdcpp, --whispercpp, --steps, --cfg-scale,
// --width, --height) to `app`, bound to `values`.
void add_load_options(CLI::App& app, RouterOptionValues& values);

// Adds every router option (with its LEMONADE_* variable) to `app`, bound to
// `values`, which must outlive the parse.
void add_router_options(CLI::App& app, RouterOptionValues& values);

}  // namespace lemon
