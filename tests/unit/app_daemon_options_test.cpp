// DaemonOptions: every setting a layer is given arrives in that layer's
// options unchanged, each file where the folders say, memory admission is
// on exactly when --memory-budget is, and a reload hands over only the
// layers whose live settings changed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lemon/app/daemon_options.h"
#include "lemon/options/router_settings.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;
using testing::TempDir;

class DaemonOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"LEMONADE_CONFIG_DIR", "LEMONADE_DEFAULTS_FILE", "HF_HOME",
                             "LEMONADE_RUNTIME_DIR", "LEMONADE_API_KEY", "LEMONADE_ADMIN_API_KEY",
                             "LEMONADE_LOG_LEVEL", "LEMONADE_MEMORY_BUDGET"}) {
      env_.unset(name);
    }
    env_.set("HOME", tmp_.path().string());
    env_.set("LEMONADE_CACHE_DIR", "/cache");
    env_.set("HF_HUB_CACHE", "/hf/hub");
  }

  // Options whose every setting differs from its default; `more` replaces
  // a flag's value or adds one.
  DaemonOptions distinctive(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"lemonade-router",
                                     "--host=0.0.0.0",
                                     "--port=9123",
                                     "--log-level=debug",
                                     "--extra-models-dir=" + tmp_.path().string(),
                                     "--load-timeout=1.234",
                                     "--stop-grace=2.345",
                                     "--max-body-size=1",
                                     "--max-connections=16",
                                     "--max-connections-per-client=3",
                                     "--max-request-memory=2",
                                     "--max-response-size=3",
                                     "--max-queued-requests=4",
                                     "--max-queued-requests-total=5",
                                     "--max-replicas=6",
                                     "--scale-up-after=0.007",
                                     "--scale-down-after=0.008",
                                     "--keep-alive=9ms",
                                     "--max-starvation=0.01",
                                     "--memory-margin=11",
                                     "--memory-poll-interval=0.12",
                                     "--session-ttl=0.13",
                                     "--ctx-size=2048",
                                     "--request-timeout=0.014",
                                     "--backend-retry-delay=0.015",
                                     "--stream-idle-timeout=0.016",
                                     "--backend-idle-timeout=0.017",
                                     "--stream-heartbeat=0.018",
                                     "--max-prefill-tokens=19",
                                     "--header-timeout=0.02",
                                     "--body-timeout=0.021",
                                     "--body-min-rate=22",
                                     "--keep-alive-timeout=0.023",
                                     "--write-timeout=0.024",
                                     "--api-key=key",
                                     "--health-without-auth",
                                     "--metrics-public",
                                     "--cors-origins=http://a.example/",
                                     "--ollama-port=11435",
                                     "--max-loaded-models=7",
                                     "--slot-cache-size=8G",
                                     "--slot-save-min-tokens=25",
                                     "--slot-save-timeout=2.6",
                                     "--drain-timeout=2.7",
                                     "--ready-fd=28"};
    for (const auto& arg : more) {  // in place of the same flag's
      const std::string flag = arg.substr(0, arg.find('='));
      std::erase_if(args, [&](const std::string& a) { return a.starts_with(flag + "="); });
      args.push_back(arg);
    }
    ParsedConfig p = parse_config(args);
    EXPECT_FALSE(p.exit_now) << p.message;
    return p.options;
  }

  TempDir tmp_{"lemon-daemon-options"};
  ScopedEnv env_;
};

TEST_F(DaemonOptionsTest, TheCatalogueAndPresetsReadWhereTheFoldersSay) {
  const DaemonOptions o = distinctive();
  EXPECT_EQ(o.app.cache_dir, "/cache");
  EXPECT_EQ(o.app.hf_hub_cache, "/hf/hub");
  EXPECT_EQ(o.catalogue.server_models_json, o.app.resources_dir + "/server_models.json");
  EXPECT_EQ(o.catalogue.cache_dir, "/cache");
  EXPECT_EQ(o.catalogue.hf_hub_cache, "/hf/hub");
  EXPECT_EQ(o.catalogue.extra_models_dir, tmp_.path().string());
  EXPECT_EQ(o.presets.builtin_json, o.app.resources_dir + "/presets.json");
  EXPECT_EQ(o.presets.cache_dir, "/cache");
  EXPECT_EQ(o.presets.hf_hub_cache, "/hf/hub");
}

TEST_F(DaemonOptionsTest, BackendsGetTheTimeoutsVerbosityAndSlotStore) {
  const DaemonOptions o = distinctive();
  EXPECT_EQ(o.backends.load_timeout, 1234ms);
  EXPECT_EQ(o.backends.stop_grace, 2345ms);
  EXPECT_EQ(o.backends.cache_dir, "/cache");
  EXPECT_TRUE(o.backends.verbose);
  EXPECT_EQ(o.backends.slot_cache_dir, "/cache/slot_cache");
  ASSERT_TRUE(o.slot_store.has_value());
  EXPECT_EQ(o.slot_store->root, "/cache/slot_cache");
  EXPECT_EQ(o.slot_store->budget_bytes, 8ULL << 30);
  EXPECT_EQ(o.slot_store->min_tokens, 25);
  EXPECT_EQ(o.slot_store->timeout, 2600ms);
  EXPECT_FALSE(distinctive({"--log-level=info"}).backends.verbose);
  const DaemonOptions off = distinctive({"--slot-cache-size=off"});
  EXPECT_FALSE(off.slot_store.has_value());
  EXPECT_EQ(off.backends.slot_cache_dir, "");
  EXPECT_EQ(distinctive({"--slot-cache-size=auto"}).slot_store->budget_bytes, 0u);
}

TEST_F(DaemonOptionsTest, TheRouterGetsLimitsQueuesAndThePool) {
  const DaemonOptions o = distinctive();
  const RouterConfig& r = o.router;
  EXPECT_EQ(r.limits.limit(ModelType::kLlm), 7);
  EXPECT_EQ(r.limits.limit(ModelType::kEmbedding), 7);
  EXPECT_EQ(r.cli_options.ctx_size(), 2048);
  EXPECT_EQ(r.max_queued_per_model, 4);
  EXPECT_EQ(r.max_queued_total, 5);
  EXPECT_EQ(r.max_replicas, 6);
  EXPECT_EQ(r.scale_up_after, 7ms);
  EXPECT_EQ(r.scale_down_after, 8ms);
  EXPECT_EQ(r.keep_alive, std::optional<std::chrono::milliseconds>(9ms));
  EXPECT_EQ(r.max_starvation, 10ms);
  EXPECT_TRUE(r.memory_budget_on);
  EXPECT_DOUBLE_EQ(r.memory_budget.fraction, 0.8);
  EXPECT_EQ(r.memory_margin, 11 << 20);
  EXPECT_EQ(r.memory_poll_interval, 120ms);
  EXPECT_EQ(r.memory, nullptr) << "main adds the device readings";
}

TEST_F(DaemonOptionsTest, MemoryAdmissionIsOffWithoutABudget) {
  EXPECT_FALSE(distinctive({"--memory-budget=off"}).router.memory_budget_on);
  const DaemonOptions absolute = distinctive({"--memory-budget=24G"});
  EXPECT_TRUE(absolute.router.memory_budget_on);
  EXPECT_EQ(absolute.router.memory_budget.ram_bytes, std::int64_t{24} << 30);
}

TEST_F(DaemonOptionsTest, TheServerGetsItsLimitsTimeoutsAndAccess) {
  const DaemonOptions o = distinctive();
  const http::ApiSettings& a = o.http;
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 9123);
  EXPECT_EQ(a.server.max_body_bytes, 1u << 20);
  EXPECT_EQ(a.server.max_connections, 16);
  EXPECT_EQ(a.server.max_connections_per_client, 3);
  EXPECT_EQ(a.server.max_request_memory, 2u << 20);
  EXPECT_EQ(a.server.header_timeout, 20ms);
  EXPECT_EQ(a.server.body_idle_timeout, 21ms);
  EXPECT_EQ(a.server.body_min_rate, 22u);
  EXPECT_EQ(a.server.keep_alive_timeout, 23ms);
  EXPECT_EQ(a.server.write_timeout, 24ms);
  ASSERT_EQ(a.keys.keys().size(), 1u);
  EXPECT_EQ(a.keys.keys()[0].name, "api_key");
  EXPECT_NE(a.keys.find("key"), nullptr);
  EXPECT_EQ(a.keys.find("other"), nullptr);
  EXPECT_EQ(a.audit_log_file, "/cache/audit.jsonl");
  EXPECT_TRUE(a.access.health_without_auth);
  EXPECT_TRUE(a.access.metrics_public);
  EXPECT_EQ(a.access.cors_origins, std::vector<std::string>{"http://a.example"});
  EXPECT_EQ(a.ollama_port, std::optional<int>(11435));
}

TEST_F(DaemonOptionsTest, TheInferencePathGetsItsLimitsAndTimeouts) {
  const inference::ForwardSettings f = distinctive().forward;
  EXPECT_EQ(f.max_response_bytes, 3u << 20);
  EXPECT_EQ(f.request_timeout, 14ms);
  EXPECT_EQ(f.backend_retry_delay, 15ms);
  EXPECT_EQ(f.stream_idle_timeout, 16ms);
  EXPECT_EQ(f.backend_idle_timeout, 17ms);
  EXPECT_EQ(f.stream_heartbeat, 18ms);
  EXPECT_EQ(f.max_prefill_tokens, 19);
}

TEST_F(DaemonOptionsTest, LemonadesRoomsGetTheDashboardTheCacheAndTheSessionTtl) {
  const DaemonOptions o = distinctive();
  EXPECT_EQ(o.lemonade.web_dir, o.app.resources_dir + "/web");
  EXPECT_EQ(o.lemonade.cache_dir, "/cache");
  EXPECT_EQ(o.lemonade.session_journal_dir, "/cache/sessions");
  EXPECT_EQ(o.lemonade.session_ttl, 130ms);
  EXPECT_EQ(o.app.drain_timeout, 2700ms);
  EXPECT_EQ(o.app.ready_fd, 28);
}

TEST_F(DaemonOptionsTest, TheInstallerFollowsTheHubsOfflineSetting) {
  const DaemonOptions o = distinctive();
  HubSettings hub;
  hub.offline = true;
  InstallerSettings i = installer_settings(o.app, hub);
  EXPECT_EQ(i.cache_dir, "/cache");
  EXPECT_EQ(i.resources_dir, o.app.resources_dir);
  EXPECT_TRUE(i.offline);
  EXPECT_FALSE(i.releases_base.empty());
}

TEST(LiveParts, AReloadHandsOverOnlyTheLayersWhoseLiveSettingsChanged) {
  EXPECT_EQ(live_parts_of({"keep_alive", "ctx_size"}), std::set<LivePart>{LivePart::kRouter});
  EXPECT_EQ(live_parts_of({"cors_origins", "auth"}), std::set<LivePart>{LivePart::kHttp});
  EXPECT_EQ(live_parts_of({"request_timeout"}), std::set<LivePart>{LivePart::kForward});
  EXPECT_EQ(live_parts_of({"remote_discovery"}), std::set<LivePart>{LivePart::kRemote});
  EXPECT_EQ(live_parts_of({"profiles"}), std::set<LivePart>{LivePart::kProfiles});
  EXPECT_EQ(live_parts_of({"log_level"}), std::set<LivePart>{LivePart::kLogLevel});
  EXPECT_TRUE(live_parts_of({"load_timeout", "session_ttl"}).empty());
  // Every live setting reaches a layer that takes it while it runs.
  for (const Setting& s : router_settings()) {
    if (s.live) {
      EXPECT_EQ(live_parts_of({s.key}).size(), 1u) << s.key;
    }
  }
}

}  // namespace
}  // namespace lemon
