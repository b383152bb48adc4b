// lemonade-router: wires the rooms together and runs until SIGINT/SIGTERM
// (graceful_drain.h). Children also die with the router through
// PR_SET_PDEATHSIG, even after kill -9.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "lemon/api/anthropic/anthropic_api.h"
#include "lemon/api/lemonade/alias_api.h"
#include "lemon/api/lemonade/backend_api.h"
#include "lemon/api/lemonade/dashboard_api.h"
#include "lemon/api/lemonade/management_api.h"
#include "lemon/api/lemonade/model_options_api.h"
#include "lemon/api/lemonade/model_store_api.h"
#include "lemon/api/lemonade/observe_api.h"
#include "lemon/api/lemonade/preset_api.h"
#include "lemon/api/lemonade/pressure_api.h"
#include "lemon/api/lemonade/profile_api.h"
#include "lemon/api/lemonade/routing_api.h"
#include "lemon/api/lemonade/session_api.h"
#include "lemon/api/llamacpp/llamacpp_api.h"
#include "lemon/api/ollama/ollama_api.h"
#include "lemon/api/openai/openai_api.h"
#include "lemon/api/openai/realtime_api.h"
#include "lemon/app/config_reloader.h"
#include "lemon/app/daemon_options.h"
#include "lemon/app/graceful_drain.h"
#include "lemon/app/log_stream_attachment.h"
#include "lemon/backends/flm_inventory.h"
#include "lemon/backends/server_factory.h"
#include "lemon/core/log.h"
#include "lemon/inference/generation_defaults.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/net/loopback_beacon.h"
#include "lemon/process/port_allocator.h"
#include "lemon/process/process_launcher.h"
#include "lemon/remote/remote_models.h"
#include "lemon/telemetry/device_memory_reader.h"
#include "lemon/telemetry/footprint_file.h"
#include "lemon/telemetry/system_stats.h"
#include "lemon/telemetry/telemetry_hub.h"

int main(int argc, char** argv) {
  using namespace lemon;
  ParsedConfig parsed = parse_config(argc, argv);
  if (parsed.exit_now) {
    if (parsed.exit_code != 0) {
      std::cerr << "lemonade-router: " << parsed.message << "\n";
    }
    return parsed.exit_code;
  }
  const DaemonOptions& options = parsed.options;
  const AppOptions& app = options.app;
  if (!app.profile.empty() && !options.profiles.contains(app.profile)) {
    std::cerr << "lemonade-router: --profile " << app.profile
              << ": no such profile in config.json's profiles\n";
    return 2;
  }
  init_logging(app.log_level);
  telemetry::TelemetryHub telemetry;
  LogStreamAttachment log_stream(telemetry.logs());
  auto log = logger("app");
  if (!parsed.provenance.ignored_config_file.empty()) {
    log->warn("{} is ignored: {} is read (only one config.json is)",
              parsed.provenance.ignored_config_file, parsed.provenance.config_file);
  }
  if (!parsed.provenance.not_applied.empty()) {
    std::string keys;
    for (const auto& key : parsed.provenance.not_applied) {
      keys += (keys.empty() ? "" : ", ") + key;
    }
    log->info("config.json: Lemonade 11's keys accepted but not applied: {}", keys);
  }
  ShutdownSignals signals;  // before any other thread starts

  // Models: the catalogue, with presets over it, and the store that pulls.
  // Models served by other machines are listed in it too.
  auto launcher = make_posix_process_launcher();
  FlmInventory flm_inventory(*launcher, app.cache_dir);
  const ModelCatalogue* catalogue_for_remote = nullptr;  // set once the catalogue is open
  remote::RemoteModels remote(
      options.remote, {[&catalogue_for_remote](std::string_view name) {
                         return catalogue_for_remote != nullptr ? catalogue_for_remote->find(name)
                                                                : std::nullopt;
                       },
                       [&telemetry](const std::string& type, nlohmann::json data) {
                         telemetry.events().publish(type, std::move(data));
                       }});
  CatalogueSources sources = options.catalogue;
  sources.flm_installed = [&flm_inventory] { return flm_inventory.installed(); };
  sources.remote_models = [&remote] { return remote.declared(); };
  auto catalogue = ModelCatalogue::open(sources);
  if (!catalogue.ok()) {
    std::cerr << "lemonade-router: " << catalogue.error().message() << "\n";
    return 1;
  }
  catalogue_for_remote = catalogue->get();
  PresetCatalogue presets(**catalogue, options.presets);
  if (Status read = presets.file_status(); !read.ok()) {
    std::cerr << "lemonade-router: --models-preset: " << read.error().message() << "\n";
    return 1;
  }
  HubSettings hub = HubSettings::from_environment();
  hub.offline = hub.offline || app.offline;
  // llama-server's router API (api_llamacpp) hears of downloads and of the
  // router's events too; it is made once the router is. Declared before the
  // store and the router, so it outlives their threads.
  std::atomic<api::LlamaCppApi*> llamacpp_api_ptr{nullptr};
  ModelStore store(**catalogue, HubClient(hub));
  store.set_observer(
      {[&telemetry, &llamacpp_api_ptr](const std::string& model, const download::TaskProgress& p) {
         if (api::LlamaCppApi* llamacpp = llamacpp_api_ptr.load()) {
           llamacpp->on_download_progress(model, p.file, p.bytes_done, p.bytes_total);
         }
         telemetry.on_download_progress(model, p.file, p.bytes_done, p.bytes_total);
       },
       [&telemetry, &llamacpp_api_ptr](const std::string& model, const Status& result) {
         if (api::LlamaCppApi* llamacpp = llamacpp_api_ptr.load()) {
           llamacpp->on_download_end(model);
         }
         telemetry.on_download_end(model, result);
       }});

  // Backends and the router that loads them.
  PortAllocator ports(8001, static_cast<int>(::getpid() % 1000),
                      app.runtime_dir + "/lemonade-router-ports");
  BackendEnvironment env = options.backends;
  env.launcher = launcher.get();
  env.ports = &ports;
  env.router_port = options.http.port;
  RecipeServerFactory factory(env);  // keeps a reference to env
  BackendInstaller installer(installer_settings(app, hub));
  RouterConfig routing = options.router;
  if (routing.memory_budget_on) {
    routing.memory = std::make_shared<telemetry::SystemDeviceMemory>(launcher.get());
  }
  routing.on_event = [&telemetry, &llamacpp_api_ptr](const RouterEvent& e) {
    if (api::LlamaCppApi* llamacpp = llamacpp_api_ptr.load()) {
      llamacpp->on_router_event(e);
    }
    telemetry.on_router_event(e);
  };
  std::optional<SlotFileStore> slot_store;
  if (options.slot_store) {
    slot_store.emplace(with_auto_slot_budget(*options.slot_store));
    routing.slot_store = &*slot_store;
  }
  // What servers were measured to hold, per configuration, for the next
  // admission of the same (only measured with a memory budget).
  std::optional<FootprintFile> footprints;
  if (routing.memory_budget_on) {
    footprints.emplace(std::filesystem::path(app.cache_dir) / "footprints.json");
    routing.footprints = &*footprints;
  }
  Router router(presets, factory, routing);

  // Observers, then the API over all of it.
  telemetry::ContextMonitor context(router, telemetry.events());
  context.start();
  telemetry::SystemStatsReader system_stats(launcher.get());
  StatsStore stats;
  http::ApiServer server(options.http, telemetry);
  // The inference path every API room hands its requests to.
  inference::ModelProvisioner provisioner(**catalogue, presets, store, installer, router,
                                          options.backends.binaries);
  inference::GenerationDefaults generation_defaults;
  inference::InferenceGateway gateway(options.forward, provisioner, generation_defaults, stats,
                                      telemetry, server.drain_expired());
  gateway.serve_remote(&remote);
  // Routing policies (collection.router): decided before a request's lease.
  inference::PolicyRouting policies(**catalogue, router, telemetry);
  policies.use_gateway(&gateway);
  gateway.serve_policies(&policies);
  // The API rooms (src/api/*): each takes only what it uses and adds its
  // routes to the server's table.
  const api::LemonadeSettings& lemonade = options.lemonade;
  api::ManagementApi management_api(**catalogue, presets, installer, router, stats, provisioner,
                                    server, lemonade);
  management_api.show_remote(&remote);
  management_api.show_streams(
      [&gateway](const std::string& model) { return gateway.open_streams(model); });
  management_api.show_routing(&policies);
  management_api.register_routes(server);
  api::ModelStoreApi store_api(**catalogue, store, provisioner, lemonade.default_model_source);
  store_api.use_policies(&policies);
  store_api.register_routes(server);
  api::RoutingApi routing_api(policies);
  routing_api.register_routes(server);
  api::PressureApi pressure_api(router);  // POST /internal/simulate-vram-pressure
  pressure_api.register_routes(server);
  api::AliasApi alias_api(**catalogue);
  alias_api.use_policies(&policies);
  alias_api.register_routes(server);
  api::ModelOptionsApi options_api(**catalogue, router, provisioner);
  options_api.register_routes(server);
  api::BackendApi backend_api(installer, router);
  backend_api.register_routes(server);
  api::PresetApi preset_api(presets, router);
  preset_api.register_routes(server);
  api::SessionApi session_api(router, gateway, stats, telemetry.events(), lemonade);
  session_api.register_routes(server);
  api::ObserveApi observe_api(telemetry, context, system_stats, router, generation_defaults,
                              server);
  observe_api.show_remote(&remote);
  observe_api.register_routes(server);
  api::DashboardApi dashboard_api(lemonade.web_dir);
  dashboard_api.register_routes(server);
  api::OpenAiApi openai_api(**catalogue, provisioner, gateway);
  openai_api.register_routes(server);
  api::RealtimeApi realtime_api(gateway);  // WebSocket /realtime
  realtime_api.register_routes(server);
  api::AnthropicApi anthropic_api(gateway);
  anthropic_api.register_routes(server);
  api::OllamaApi ollama_api(**catalogue, store, router, provisioner, gateway);
  ollama_api.register_routes(server);
  // llama-server's router API: its routes, and its fields in
  // GET /v1/models and /metrics?model=.
  api::LlamaCppApi llamacpp_api(**catalogue, presets, store, router, factory, provisioner, gateway,
                                telemetry, server);
  llamacpp_api.register_routes(server);
  llamacpp_api_ptr = &llamacpp_api;
  // Cleared before llamacpp_api is destroyed, on every way out of main.
  std::unique_ptr<std::atomic<api::LlamaCppApi*>, void (*)(std::atomic<api::LlamaCppApi*>*)>
      forget_llamacpp_api(&llamacpp_api_ptr,
                          [](std::atomic<api::LlamaCppApi*>* ptr) { *ptr = nullptr; });
  management_api.extend_models(
      [&llamacpp_api](nlohmann::json& entries) { llamacpp_api.annotate_models(entries); });
  observe_api.serve_model_metrics([&llamacpp_api](net::Request& r, net::ResponseWriter& w) {
    return llamacpp_api.serve_model_metrics(r, w);
  });
  // Profiles: POST /internal/profile, --profile, /health's.
  api::ProfileApi profile_api(router, provisioner, options.profiles,
                              [&server] { return server.draining(); });
  profile_api.register_routes(server);
  management_api.show_profile([&profile_api] { return profile_api.active(); });
  // SIGHUP reads the configuration again; GET /internal/config.
  ConfigReloader reloader(
      std::vector<std::string>(argv, argv + argc), parsed.provenance, telemetry.events(),
      {.router =
           [&router](const RouterConfig& read) {
             router.apply_live_settings(LiveRouterSettings::of(read));
           },
       .http = [&server](const http::ApiSettings& read) { server.reconfigure(read); },
       .forward =
           [&gateway](const inference::ForwardSettings& read) { gateway.set_settings(read); },
       .remote = [&remote](const remote::RemoteSettings& read) { remote.reconfigure(read); },
       .profiles = [&profile_api](const Profiles& read) { profile_api.set_profiles(read); },
       .catalogue =
           [&catalogue](const CatalogueSources& read) {
             (*catalogue)->set_extra_models_dir(read.extra_models_dir);
           }});
  reloader.register_routes(server);
  reloader.start_watching();
  remote.start();
  auto port = server.bind();
  if (!port.ok()) {
    std::cerr << "lemonade-router: cannot listen on " << options.http.host << ":"
              << options.http.port << ": " << port.error().message() << "\n";
    return 1;
  }
  log->info("lemonade-router {} listening on http://{}:{} (models: {}, cache: {})",
            LEMON_ROUTER_VERSION, options.http.host, *port, sources.server_models_json,
            app.cache_dir);
  if (auto ollama_port = server.ollama_port()) {
    log->info("Ollama API also served on http://{}:{} (--ollama-port)", options.http.host,
              *ollama_port);
  }
  if (auto socket_port = server.bound_websocket_port()) {
    log->info("WebSocket routes also served on ws://{}:{} (--websocket-port)", options.http.host,
              *socket_port);
  }
  // Lemonade 11's clients find the router by this beacon (docs/cli.md).
  std::optional<net::LoopbackBeacon> beacon;
  if (!app.no_broadcast && net::reachable_at_ipv4_loopback(options.http.host)) {
    beacon.emplace(net::BeaconSettings{.router_port = *port, .destination_port = app.beacon_port});
    if (Status started = beacon->start(); !started.ok()) {
      log->warn("no beacon: {}", started.error().message());
    } else {
      log->info("beacon: UDP 127.0.0.1:{} every 2 s names this port (--no-broadcast: none)",
                app.beacon_port);
    }
  }
  if (app.ready_fd >= 0) {
    // A launcher (lemonade-server) waits on this pipe instead of polling.
    std::string ready = std::to_string(*port) + "\n";
    [[maybe_unused]] auto written = ::write(app.ready_fd, ready.data(), ready.size());
    ::close(app.ready_fd);
  }

  llamacpp_api.start_startup_loads();
  GracefulDrain drain(signals, DrainTargets{store, installer, server, context, router},
                      app.drain_timeout, [&reloader] { reloader.reload(); });
  std::thread start_profile;
  if (!app.profile.empty()) {
    start_profile = std::thread([&profile_api, &log, name = app.profile] {
      try {
        auto done = profile_api.activate(name);
        if (!done.ok()) {
          log->error("--profile {}: {}", name, done.error().message());
        }
      } catch (const std::exception& e) {
        log->error("--profile {}: {}", name, e.what());
      }
    });
  }
  server.run();
  if (beacon) {
    beacon->stop();  // a draining router is no longer one to find
  }
  if (start_profile.joinable()) {
    start_profile.join();
  }
  drain.finish();
  store.stop();                // no pull reports to llamacpp_api after this
  llamacpp_api_ptr = nullptr;  // the router has stopped
  log->info("stopped");
  return 0;
}
