// subsystem_settings: every Config field a room is given arrives in that
// room's settings unchanged, and memory admission is on exactly when
// --memory-budget is.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "lemon/app/subsystem_settings.h"
#include "lemon/process/port_allocator.h"
#include "lemon/process/process_launcher.h"
#include "lemon/router/device_memory.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;

// A Config whose every field differs from its default.
Config distinctive_config() {
  Config cfg;
  cfg.host = "0.0.0.0";
  cfg.port = 9123;
  cfg.log_level = "debug";
  cfg.extra_models_dir = "/models/extra";
  cfg.load_timeout = 1234ms;
  cfg.stop_grace = 2345ms;
  cfg.cache_dir = "/cache";
  cfg.hf_hub_cache = "/hf/hub";
  cfg.resources_dir = "/res";
  cfg.max_body_bytes = 111;
  cfg.max_connections = 12;
  cfg.max_connections_per_client = 3;
  cfg.max_request_memory = 222;
  cfg.max_response_bytes = 333;
  cfg.max_queued_per_model = 4;
  cfg.max_queued_total = 5;
  cfg.max_replicas = 6;
  cfg.scale_up_after = 7ms;
  cfg.scale_down_after = 8ms;
  cfg.keep_alive = 9ms;
  cfg.max_starvation = 10ms;
  cfg.memory_margin = 11;
  cfg.memory_poll_interval = 12ms;
  cfg.session_ttl = 13ms;
  cfg.cli_options = RecipeOptions::from_json("", {{"ctx_size", 4096}}).value();
  cfg.request_timeout = 14ms;
  cfg.backend_retry_delay = 15ms;
  cfg.stream_idle_timeout = 16ms;
  cfg.backend_idle_timeout = 17ms;
  cfg.stream_heartbeat = 18ms;
  cfg.max_prefill_tokens = 19;
  cfg.header_timeout = 20ms;
  cfg.body_timeout = 21ms;
  cfg.body_min_rate = 22;
  cfg.keep_alive_timeout = 23ms;
  cfg.write_timeout = 24ms;
  cfg.api_key = "key";
  cfg.health_without_auth = true;
  cfg.metrics_public = true;
  cfg.cors_origins = {"http://a.example"};
  cfg.ollama_port = 11435;
  cfg.websocket_port = 9100;
  cfg.limits = SlotLimits::uniform(7);
  return cfg;
}

class NoDeviceMemory : public DeviceMemorySource {
 public:
  std::vector<DeviceReading> read() override { return {}; }
};

TEST(SubsystemSettings, TheCatalogueAndPresetsReadWhereTheConfigSays) {
  const Config cfg = distinctive_config();
  CatalogueSources c = catalogue_sources(cfg, [] { return std::vector<std::string>{"flm-a"}; });
  EXPECT_EQ(c.server_models_json, "/res/server_models.json");
  EXPECT_EQ(c.cache_dir, "/cache");
  EXPECT_EQ(c.hf_hub_cache, "/hf/hub");
  EXPECT_EQ(c.extra_models_dir, "/models/extra");
  ASSERT_TRUE(c.flm_installed);
  EXPECT_EQ(c.flm_installed(), std::vector<std::string>{"flm-a"});
  PresetSources p = preset_sources(cfg);
  EXPECT_EQ(p.builtin_json, "/res/presets.json");
  EXPECT_EQ(p.cache_dir, "/cache");
  EXPECT_EQ(p.hf_hub_cache, "/hf/hub");
}

TEST(SubsystemSettings, BackendsGetTheTimeoutsAndVerbosity) {
  Config cfg = distinctive_config();
  auto launcher = make_posix_process_launcher();
  PortAllocator ports(8001, 0, "");
  BackendEnvironment env = backend_environment(cfg, *launcher, ports);
  EXPECT_EQ(env.launcher, launcher.get());
  EXPECT_EQ(env.ports, &ports);
  EXPECT_EQ(env.load_timeout, 1234ms);
  EXPECT_EQ(env.stop_grace, 2345ms);
  EXPECT_EQ(env.cache_dir, "/cache");
  EXPECT_TRUE(env.verbose);
  cfg.log_level = "info";
  EXPECT_FALSE(backend_environment(cfg, *launcher, ports).verbose);
}

TEST(SubsystemSettings, TheRouterGetsLimitsQueuesAndThePool) {
  const Config cfg = distinctive_config();
  RouterConfig r = router_config(cfg, std::make_shared<NoDeviceMemory>());
  EXPECT_EQ(r.limits.limit(ModelType::kLlm), 7);
  EXPECT_EQ(r.limits.limit(ModelType::kEmbedding), 7);
  EXPECT_EQ(r.max_queued_per_model, 4);
  EXPECT_EQ(r.max_queued_total, 5);
  EXPECT_EQ(r.max_replicas, 6);
  EXPECT_EQ(r.scale_up_after, 7ms);
  EXPECT_EQ(r.scale_down_after, 8ms);
  EXPECT_EQ(r.keep_alive, std::optional<std::chrono::milliseconds>(9ms));
  EXPECT_EQ(r.max_starvation, 10ms);
  EXPECT_NE(r.memory, nullptr);
  EXPECT_EQ(r.memory_margin, 11);
  EXPECT_EQ(r.memory_poll_interval, 12ms);
}

TEST(SubsystemSettings, MemoryAdmissionIsOffWithoutABudget) {
  Config cfg = distinctive_config();
  cfg.memory_budget.reset();
  RouterConfig r = router_config(cfg, std::make_shared<NoDeviceMemory>());
  EXPECT_EQ(r.memory, nullptr);
}

TEST(SubsystemSettings, TheApiGetsTheServersLimitsTimeoutsAndAccess) {
  const Config cfg = distinctive_config();
  http::ApiSettings a = api_settings(cfg);
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 9123);
  EXPECT_EQ(a.server.max_body_bytes, 111u);
  EXPECT_EQ(a.server.max_connections, 12);
  EXPECT_EQ(a.server.max_connections_per_client, 3);
  EXPECT_EQ(a.server.max_request_memory, 222u);
  EXPECT_EQ(a.server.header_timeout, 20ms);
  EXPECT_EQ(a.server.body_idle_timeout, 21ms);
  EXPECT_EQ(a.server.body_min_rate, 22u);
  EXPECT_EQ(a.server.keep_alive_timeout, 23ms);
  EXPECT_EQ(a.server.write_timeout, 24ms);
  const inference::ForwardSettings f = forward_settings(cfg);
  EXPECT_EQ(f.max_response_bytes, 333u);
  EXPECT_EQ(f.request_timeout, 14ms);
  EXPECT_EQ(f.backend_retry_delay, 15ms);
  EXPECT_EQ(f.stream_idle_timeout, 16ms);
  EXPECT_EQ(f.backend_idle_timeout, 17ms);
  EXPECT_EQ(f.stream_heartbeat, 18ms);
  EXPECT_EQ(f.max_prefill_tokens, 19);
  ASSERT_EQ(a.keys.keys().size(), 1u);
  EXPECT_EQ(a.keys.keys()[0].name, "api_key");
  EXPECT_NE(a.keys.find("key"), nullptr);
  EXPECT_EQ(a.keys.find("other"), nullptr);
  EXPECT_TRUE(a.access.health_without_auth);
  EXPECT_TRUE(a.access.metrics_public);
  EXPECT_EQ(a.access.cors_origins, std::vector<std::string>{"http://a.example"});
  EXPECT_EQ(a.ollama_port, std::optional<int>(11435));
  EXPECT_EQ(a.websocket_port, std::optional<int>(9100));
}

TEST(SubsystemSettings, LemonadesRoomsGetTheDashboardTheCacheAndTheSessionTtl) {
  const Config cfg = distinctive_config();
  api::LemonadeSettings l = lemonade_settings(cfg);
  EXPECT_EQ(l.web_dir, "/res/web");
  EXPECT_EQ(l.cache_dir, "/cache");
  EXPECT_EQ(l.session_ttl, 13ms);
}

TEST(SubsystemSettings, TheInstallerFollowsTheHubsOfflineSetting) {
  const Config cfg = distinctive_config();
  HubSettings hub;
  hub.offline = true;
  InstallerSettings i = installer_settings(cfg, hub);
  EXPECT_EQ(i.cache_dir, "/cache");
  EXPECT_EQ(i.resources_dir, "/res");
  EXPECT_TRUE(i.offline);
  EXPECT_FALSE(i.releases_base.empty());
}

}  // namespace
}  // namespace lemon
