// lemonade-router: wires the layers together and runs until SIGINT/SIGTERM.
//
// Signals are blocked in every thread and taken by one sigwait() thread, which
// stops the HTTP server and then every backend (so open streams end and
// connection threads finish). Children also die with the router through
// PR_SET_PDEATHSIG, even after kill -9.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include "lemon/app/config.h"
#include "lemon/backends/backend_installer.h"
#include "lemon/backends/flm_inventory.h"
#include "lemon/backends/server_factory.h"
#include "lemon/backends/system_info.h"
#include "lemon/core/log.h"
#include "lemon/http/api_server.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/hub_client.h"
#include "lemon/models/model_store.h"
#include "lemon/models/preset_catalogue.h"
#include "lemon/process/port_allocator.h"
#include "lemon/process/process_launcher.h"
#include "lemon/router/router.h"
#include "lemon/telemetry/context_monitor.h"
#include "lemon/telemetry/device_memory_reader.h"
#include "lemon/telemetry/system_stats.h"
#include "lemon/telemetry/telemetry_hub.h"

namespace {

sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lemon;
  ParsedConfig parsed = parse_config(argc, argv);
  if (parsed.exit_now) {
    if (parsed.exit_code != 0) {
      std::cerr << "lemonade-router: " << parsed.message << "\n";
    }
    return parsed.exit_code;
  }
  const Config& cfg = parsed.config;
  init_logging(cfg.log_level);
  // Log lines and backend output also go to the log stream (GET /logs/stream).
  telemetry::TelemetryHub telemetry;
  // Detached before `telemetry` goes away, on every way out of main.
  struct LogStreamAttachment {
    explicit LogStreamAttachment(telemetry::LogRing& ring)
        : sink(telemetry::LogRing::make_sink(ring)) {
      add_log_sink(sink);
      set_output_tap(
          [&ring](std::string_view model, std::string_view line) { ring.add_output(model, line); });
    }
    ~LogStreamAttachment() {
      set_output_tap({});
      remove_log_sink(sink);
    }
    LogStreamAttachment(const LogStreamAttachment&) = delete;
    LogStreamAttachment& operator=(const LogStreamAttachment&) = delete;
    spdlog::sink_ptr sink;
  } log_stream(telemetry.logs());
  auto log = logger("app");

  // Before any thread starts, so every thread inherits the mask.
  sigset_t signals = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto launcher = make_posix_process_launcher();
  FlmInventory flm_inventory(*launcher, cfg.cache_dir);

  CatalogueSources sources;
  sources.server_models_json = cfg.resources_dir + "/server_models.json";
  sources.cache_dir = cfg.cache_dir;
  sources.hf_hub_cache = cfg.hf_hub_cache;
  sources.extra_models_dir = cfg.extra_models_dir;
  sources.flm_installed = [&flm_inventory] { return flm_inventory.installed(); };
  auto catalogue = ModelCatalogue::open(sources);
  if (!catalogue.ok()) {
    std::cerr << "lemonade-router: " << catalogue.error().message() << "\n";
    return 1;
  }

  PortAllocator ports(8001, static_cast<int>(::getpid() % 1000),
                      cfg.runtime_dir + "/lemonade-router-ports");
  BackendEnvironment env;
  env.launcher = launcher.get();
  env.ports = &ports;
  env.load_timeout = cfg.load_timeout;
  env.stop_grace = cfg.stop_grace;
  env.cache_dir = cfg.cache_dir;
  env.verbose = cfg.log_level == "debug" || cfg.log_level == "trace";
  RecipeServerFactory factory(env);

  RouterConfig router_config;
  router_config.limits = cfg.limits;
  router_config.cli_options = cfg.cli_options;
  router_config.max_queued_per_model = cfg.max_queued_per_model;
  router_config.max_queued_total = cfg.max_queued_total;
  router_config.max_replicas = cfg.max_replicas;
  router_config.scale_up_after = cfg.scale_up_after;
  router_config.scale_down_after = cfg.scale_down_after;
  router_config.keep_alive = cfg.keep_alive;
  router_config.max_starvation = cfg.max_starvation;
  if (cfg.memory_budget) {
    router_config.memory = std::make_shared<telemetry::SystemDeviceMemory>(launcher.get());
    router_config.memory_budget = *cfg.memory_budget;
    router_config.memory_margin = cfg.memory_margin;
    router_config.memory_poll_interval = cfg.memory_poll_interval;
  }
  router_config.on_event = [&telemetry](const RouterEvent& e) { telemetry.on_router_event(e); };
  // Presets (issue #14 §1) wrap the catalogue: the router resolves a
  // preset's server name through them.
  PresetSources preset_sources;
  preset_sources.builtin_json = cfg.resources_dir + "/presets.json";
  preset_sources.cache_dir = cfg.cache_dir;
  preset_sources.hf_hub_cache = cfg.hf_hub_cache;
  PresetCatalogue presets(**catalogue, preset_sources);
  Router router(presets, factory, router_config);
  telemetry::ContextMonitor context(router, telemetry.events());
  context.start();
  telemetry::SystemStatsReader system_stats(launcher.get());
  StatsStore stats;

  http::ApiSettings settings;
  settings.host = cfg.host;
  settings.port = cfg.port;
  settings.server.max_body_bytes = cfg.max_body_bytes;
  settings.server.max_connections = cfg.max_connections;
  settings.server.max_request_memory = cfg.max_request_memory;
  settings.server.max_connections_per_client = cfg.max_connections_per_client;
  settings.max_response_bytes = cfg.max_response_bytes;
  settings.request_timeout = cfg.request_timeout;
  settings.backend_retry_delay = cfg.backend_retry_delay;
  settings.stream_idle_timeout = cfg.stream_idle_timeout;
  settings.backend_idle_timeout = cfg.backend_idle_timeout;
  settings.stream_heartbeat = cfg.stream_heartbeat;
  settings.max_prefill_tokens = cfg.max_prefill_tokens;
  settings.server.header_timeout = cfg.header_timeout;
  settings.server.body_idle_timeout = cfg.body_timeout;
  settings.server.body_min_rate = cfg.body_min_rate;
  settings.server.keep_alive_timeout = cfg.keep_alive_timeout;
  settings.server.write_timeout = cfg.write_timeout;
  settings.access.api_key = cfg.api_key;
  settings.access.health_without_auth = cfg.health_without_auth;
  settings.access.metrics_public = cfg.metrics_public;
  settings.web_dir = cfg.resources_dir + "/web";
  settings.access.cors_origins = cfg.cors_origins;
  settings.cache_dir = cfg.cache_dir;
  settings.cli_options = cfg.cli_options;
  settings.ollama_port = cfg.ollama_port;
  settings.session_ttl = cfg.session_ttl;
  HubSettings hub = HubSettings::from_environment();
  ModelStore store(**catalogue, HubClient(hub));
  store.set_observer({[&telemetry](const std::string& model, const download::TaskProgress& p) {
                        telemetry.on_download_progress(model, p.file, p.bytes_done, p.bytes_total);
                      },
                      [&telemetry](const std::string& model, const Status& result) {
                        telemetry.on_download_end(model, result);
                      }});
  InstallerSettings install;
  install.cache_dir = cfg.cache_dir;
  install.resources_dir = cfg.resources_dir;
  install.releases_base = releases_base_url();
  install.rocm_arch = rocm_gfx_target();
  install.offline = hub.offline;
  install.transfer = hub.transfer;
  BackendInstaller installer(install);
  http::ApiServer api(settings, **catalogue, presets, store, installer, router, stats,
                      http::Observers{telemetry, context, system_stats});
  auto port = api.bind();
  if (!port.ok()) {
    std::cerr << "lemonade-router: cannot listen on " << cfg.host << ":" << cfg.port << ": "
              << port.error().message() << "\n";
    return 1;
  }
  log->info("lemonade-router {} listening on http://{}:{} (models: {}, cache: {})",
            LEMON_ROUTER_VERSION, cfg.host, *port, sources.server_models_json, cfg.cache_dir);
  if (auto ollama = api.ollama_port()) {
    log->info("Ollama API also served on http://{}:{} (--ollama-port)", cfg.host, *ollama);
  }
  if (cfg.ready_fd >= 0) {
    // A launcher (lemonade-server) waits on this pipe instead of polling.
    std::string ready = std::to_string(*port) + "\n";
    [[maybe_unused]] auto written = ::write(cfg.ready_fd, ready.data(), ready.size());
    ::close(cfg.ready_fd);
  }

  // Graceful drain (issue #11 §6): stop accepting, let in-flight requests
  // (streams included) finish for up to --drain-timeout, then stop every
  // backend, which ends what is left (streams get an SSE error event and
  // [DONE]). A second signal skips the rest of the drain. Downloads are
  // cancelled at once (a pull resumes where it stopped).
  const auto drain_timeout = cfg.drain_timeout;
  std::atomic<bool> signalled{false};
  std::thread signal_thread(
      [&api, &router, &store, &installer, &context, &signalled, signals, log, drain_timeout] {
        int sig = 0;
        sigwait(&signals, &sig);
        signalled = true;
        log->info(
            "received signal {}; draining {} in-flight request(s) for up to {} ms (a second "
            "signal skips the drain)",
            sig, api.in_flight(), drain_timeout.count());
        store.shutdown();
        installer.shutdown();
        api.stop();
        const auto deadline = std::chrono::steady_clock::now() + drain_timeout;
        bool skipped = false;
        while (api.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
          timespec poll_interval{0, 100'000'000};
          if (sigtimedwait(&signals, nullptr, &poll_interval) > 0) {
            skipped = true;
            break;
          }
        }
        if (const int left = api.in_flight(); left > 0) {
          api.expire_drain();
          log->warn("{}: cutting {} request(s) still in flight",
                    skipped ? "second signal, drain skipped" : "--drain-timeout passed", left);
        } else {
          log->info("drained: no request in flight");
        }
        context.stop();
        router.shutdown();
      });

  api.run();
  // After a signal, the drain is waited for (it ends within 100 ms of the
  // last request). Otherwise the signal thread is still in sigwait() (the
  // server stopped for another reason); exit() ends it, so detach.
  if (signalled) {
    signal_thread.join();
  } else {
    signal_thread.detach();
  }
  store.shutdown();
  installer.shutdown();
  context.stop();
  router.shutdown();
  log->info("stopped");
  return 0;
}
