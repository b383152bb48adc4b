// parse_config: defaults, every `lemonade-server serve` flag, the
// --max-loaded-models forms, one-line errors with exit code 2, flag > env >
// default layering, cache directories, --help and --version.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "lemon/app/daemon_options.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ScopedEnv;
using testing::TempDir;

// Every variable parse_config reads.
const char* const kEnvVars[] = {"LEMONADE_HOST",
                                "LEMONADE_PORT",
                                "LEMONADE_LOG_LEVEL",
                                "LEMONADE_MAX_LOADED_MODELS",
                                "LEMONADE_CTX_SIZE",
                                "LEMONADE_LLAMACPP",
                                "LEMONADE_LLAMACPP_ARGS",
                                "LEMONADE_SDCPP",
                                "LEMONADE_WHISPERCPP",
                                "LEMONADE_STEPS",
                                "LEMONADE_CFG_SCALE",
                                "LEMONADE_WIDTH",
                                "LEMONADE_HEIGHT",
                                "LEMONADE_EXTRA_MODELS_DIR",
                                "LEMONADE_LOAD_TIMEOUT",
                                "LEMONADE_STOP_GRACE",
                                "LEMONADE_NO_BROADCAST",
                                "LEMONADE_MAX_BODY_SIZE",
                                "LEMONADE_MAX_CONNECTIONS",
                                "LEMONADE_MAX_CONNECTIONS_PER_CLIENT",
                                "LEMONADE_MAX_REQUEST_MEMORY",
                                "LEMONADE_MAX_RESPONSE_SIZE",
                                "LEMONADE_MAX_QUEUED_REQUESTS",
                                "LEMONADE_MAX_QUEUED_REQUESTS_TOTAL",
                                "LEMONADE_DRAIN_TIMEOUT",
                                "LEMONADE_REQUEST_TIMEOUT",
                                "LEMONADE_STREAM_IDLE_TIMEOUT",
                                "LEMONADE_BACKEND_IDLE_TIMEOUT",
                                "LEMONADE_HEADER_TIMEOUT",
                                "LEMONADE_BODY_TIMEOUT",
                                "LEMONADE_BODY_MIN_RATE",
                                "LEMONADE_KEEP_ALIVE_TIMEOUT",
                                "LEMONADE_WRITE_TIMEOUT",
                                "LEMONADE_CACHE_DIR",
                                "HF_HUB_CACHE",
                                "HF_HOME",
                                "HOME",
                                "LEMONADE_CONFIG_DIR",
                                "LEMONADE_API_KEY",
                                "LEMONADE_ALLOW_UNAUTHENTICATED",
                                "LEMONADE_DEFAULTS_FILE"};

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kEnvVars) {
      env_.unset(name);
    }
    env_.set("HOME", "/home/lemon-test");
  }

  static ParsedConfig parse(std::vector<std::string> args) {
    args.insert(args.begin(), "lemonade-router");
    return parse_config(args);
  }

  static DaemonOptions parse_ok(std::vector<std::string> args) {
    std::string joined;
    for (const auto& a : args) {
      joined += " " + a;
    }
    ParsedConfig p = parse(std::move(args));
    EXPECT_FALSE(p.exit_now) << joined << " -> " << p.message;
    return p.options;
  }

  // Invalid input: exit code 2 and a single-line message.
  static void expect_usage_error(std::vector<std::string> args) {
    std::string joined;
    for (const auto& a : args) {
      joined += " " + a;
    }
    ParsedConfig p = parse(std::move(args));
    EXPECT_TRUE(p.exit_now) << joined;
    EXPECT_EQ(p.exit_code, 2) << joined;
    EXPECT_FALSE(p.message.empty()) << joined;
    EXPECT_EQ(p.message.find('\n'), std::string::npos) << joined << " -> " << p.message;
  }

  // --help and --version: exit now with code 0. Returns what was printed.
  static std::string expect_exit_zero(std::vector<std::string> args) {
    ::testing::internal::CaptureStdout();
    ParsedConfig p = parse(std::move(args));
    std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_TRUE(p.exit_now);
    EXPECT_EQ(p.exit_code, 0);
    return out;
  }

  static void expect_limits(const SlotLimits& l, std::initializer_list<int> want) {
    ASSERT_EQ(want.size(), kModelTypeCount);
    std::size_t i = 0;
    for (int w : want) {
      EXPECT_EQ(l.limit(kAllModelTypes[i]), w) << model_type_name(kAllModelTypes[i]);
      ++i;
    }
  }

  TempDir tmp_{"lemon-config"};
  const fs::path dir_ = tmp_.path();
  ScopedEnv env_;
};

// ---- defaults -----------------------------------------------------------------------------

TEST_F(ConfigTest, Defaults) {
  DaemonOptions c = parse_ok({});
  EXPECT_EQ(c.http.host, "127.0.0.1");
  EXPECT_EQ(c.http.port, 8000);
  EXPECT_EQ(c.app.log_level, "info");
  expect_limits(c.router.limits, {1, 1, 1, 1, 1});
  EXPECT_EQ(c.router.cli_options.ctx_size(-1), 4096);
  EXPECT_EQ(c.backends.load_timeout, 600s);
  EXPECT_EQ(c.backends.stop_grace, 5s);
  EXPECT_FALSE(c.app.no_broadcast);
  EXPECT_EQ(c.catalogue.extra_models_dir, "");
  const auto& backends = valid_llamacpp_backends();
  EXPECT_NE(std::find(backends.begin(), backends.end(),
                      c.router.cli_options.string_value("llamacpp_backend")),
            backends.end());
  EXPECT_EQ(c.router.cli_options.string_value("llamacpp_args"), "");
  EXPECT_EQ(c.router.cli_options.string_value("sd-cpp_backend"), "cpu");
  EXPECT_EQ(c.router.cli_options.string_value("whispercpp_backend"), "cpu");
  EXPECT_EQ(c.router.cli_options.raw().value("steps", 0), 20);
  EXPECT_DOUBLE_EQ(c.router.cli_options.raw().value("cfg_scale", 0.0), 7.0);
  EXPECT_EQ(c.router.cli_options.raw().value("width", 0), 512);
  EXPECT_EQ(c.router.cli_options.raw().value("height", 0), 512);
}

// ---- deny by default off loopback (issue #30 §2) -----------------------------------------------

TEST_F(ConfigTest, AnAddressOthersReachNeedsAKeyOrSayingSo) {
  for (const char* host : {"0.0.0.0", "::", "192.168.1.20"}) {
    expect_usage_error({"--host", host});
    ParsedConfig p = parse({"--host", host});
    EXPECT_NE(p.message.find("--allow-unauthenticated"), std::string::npos) << p.message;
    EXPECT_EQ(parse_ok({"--host", host, "--api-key", "k"}).http.host, host);
    EXPECT_EQ(parse_ok({"--host", host, "--allow-unauthenticated"}).http.host, host);
  }
  for (const char* host : {"127.0.0.1", "127.0.0.2", "localhost", "::1"}) {
    EXPECT_EQ(parse_ok({"--host", host}).http.host, host) << "loopback needs no key";
  }
  env_.set("LEMONADE_API_KEY", "from-env");
  EXPECT_EQ(parse_ok({"--host", "0.0.0.0"}).http.host, "0.0.0.0");
  env_.unset("LEMONADE_API_KEY");
  env_.set("LEMONADE_ALLOW_UNAUTHENTICATED", "true");
  EXPECT_EQ(parse_ok({"--host", "0.0.0.0"}).http.host, "0.0.0.0");
}

// ---- every serve flag -----------------------------------------------------------------------

TEST_F(ConfigTest, AcceptsEveryServeFlag) {
  DaemonOptions c = parse_ok({"--allow-unauthenticated",
                              "--host",
                              "0.0.0.0",
                              "--port",
                              "9123",
                              "--log-level",
                              "debug",
                              "--no-broadcast",
                              "--max-loaded-models",
                              "2",
                              "--ctx-size",
                              "8192",
                              "--llamacpp",
                              "cpu",
                              "--llamacpp-args",
                              "-np 2",
                              "--sdcpp",
                              "cpu",
                              "--whispercpp",
                              "npu",
                              "--steps",
                              "30",
                              "--cfg-scale",
                              "4.5",
                              "--width",
                              "768",
                              "--height",
                              "640",
                              "--extra-models-dir",
                              dir_.string(),
                              "--load-timeout",
                              "90",
                              "--stop-grace",
                              "1.5"});
  EXPECT_EQ(c.http.host, "0.0.0.0");
  EXPECT_EQ(c.http.port, 9123);
  EXPECT_EQ(c.app.log_level, "debug");
  EXPECT_TRUE(c.app.no_broadcast);
  expect_limits(c.router.limits, {2, 2, 2, 2, 2});
  EXPECT_EQ(c.router.cli_options.ctx_size(), 8192);
  EXPECT_EQ(c.router.cli_options.string_value("llamacpp_backend"), "cpu");
  EXPECT_EQ(c.router.cli_options.string_value("llamacpp_args"), "-np 2");
  EXPECT_EQ(c.router.cli_options.string_value("sd-cpp_backend"), "cpu");
  EXPECT_EQ(c.router.cli_options.string_value("whispercpp_backend"), "npu");
  EXPECT_EQ(c.router.cli_options.raw().value("steps", 0), 30);
  EXPECT_DOUBLE_EQ(c.router.cli_options.raw().value("cfg_scale", 0.0), 4.5);
  EXPECT_EQ(c.router.cli_options.raw().value("width", 0), 768);
  EXPECT_EQ(c.router.cli_options.raw().value("height", 0), 640);
  EXPECT_EQ(c.catalogue.extra_models_dir, dir_.string());
  EXPECT_EQ(c.backends.load_timeout, 90s);
  EXPECT_EQ(c.backends.stop_grace, 1500ms);
}

TEST_F(ConfigTest, EqualsFormIsAccepted) {
  DaemonOptions c = parse_ok({"--port=9124", "--llamacpp-args=-np 4 --no-mmap", "--sdcpp=rocm"});
  EXPECT_EQ(c.http.port, 9124);
  EXPECT_EQ(c.router.cli_options.string_value("llamacpp_args"), "-np 4 --no-mmap");
  EXPECT_EQ(c.router.cli_options.string_value("sd-cpp_backend"), "rocm");
}

TEST_F(ConfigTest, EveryLlamacppBackendIsAccepted) {
  for (const auto& b : valid_llamacpp_backends()) {
    DaemonOptions c = parse_ok({"--llamacpp", b});
    EXPECT_EQ(c.router.cli_options.string_value("llamacpp_backend"), b);
  }
}

// ---- --max-loaded-models --------------------------------------------------------------------

TEST_F(ConfigTest, MaxLoadedModelsSingleValue) {
  expect_limits(parse_ok({"--max-loaded-models", "3"}).router.limits, {3, 3, 3, 3, 3});
}

TEST_F(ConfigTest, MaxLoadedModelsUnlimited) {
  expect_limits(parse_ok({"--max-loaded-models", "-1"}).router.limits, {-1, -1, -1, -1, -1});
}

TEST_F(ConfigTest, MaxLoadedModelsTwoArgvItemsPadWithOne) {
  expect_limits(parse_ok({"--max-loaded-models", "2", "1"}).router.limits, {2, 1, 1, 1, 1});
}

TEST_F(ConfigTest, MaxLoadedModelsFiveArgvItems) {
  expect_limits(parse_ok({"--max-loaded-models", "5", "2", "4", "1", "1"}).router.limits,
                {5, 2, 4, 1, 1});
}

TEST_F(ConfigTest, MaxLoadedModelsOneQuotedArgument) {
  expect_limits(parse_ok({"--max-loaded-models", "5 2 4 1 1"}).router.limits, {5, 2, 4, 1, 1});
}

TEST_F(ConfigTest, MaxLoadedModelsFollowedByAnotherFlag) {
  DaemonOptions c = parse_ok({"--max-loaded-models", "2", "-1", "--port", "9001"});
  expect_limits(c.router.limits, {2, -1, 1, 1, 1});
  EXPECT_EQ(c.http.port, 9001);
}

// ---- invalid input ------------------------------------------------------------------------------

TEST_F(ConfigTest, MaxLoadedModelsZeroIsRefused) {
  expect_usage_error({"--max-loaded-models", "0"});
}
TEST_F(ConfigTest, MaxLoadedModelsMinusTwoIsRefused) {
  expect_usage_error({"--max-loaded-models", "-2"});
}
TEST_F(ConfigTest, MaxLoadedModelsSixValuesIsRefused) {
  expect_usage_error({"--max-loaded-models", "1", "1", "1", "1", "1", "1"});
}
TEST_F(ConfigTest, MaxLoadedModelsNonNumberIsRefused) {
  expect_usage_error({"--max-loaded-models", "many"});
}
TEST_F(ConfigTest, NegativePortIsRefused) {
  expect_usage_error({"--port", "-1"});
}
TEST_F(ConfigTest, NonNumericPortIsRefused) {
  expect_usage_error({"--port", "abc"});
}
TEST_F(ConfigTest, PortAbove65535IsRefused) {
  expect_usage_error({"--port", "65536"});
}
TEST_F(ConfigTest, UnknownLlamacppBackendIsRefused) {
  expect_usage_error({"--llamacpp", "foo"});
}
TEST_F(ConfigTest, UnknownSdcppBackendIsRefused) {
  expect_usage_error({"--sdcpp", "vulkan"});
}
TEST_F(ConfigTest, UnknownWhispercppBackendIsRefused) {
  expect_usage_error({"--whispercpp", "rocm"});
}
TEST_F(ConfigTest, UnknownLogLevelIsRefused) {
  expect_usage_error({"--log-level", "loud"});
}
TEST_F(ConfigTest, ZeroCtxSizeIsRefused) {
  expect_usage_error({"--ctx-size", "0"});
}
TEST_F(ConfigTest, ZeroLoadTimeoutIsRefused) {
  expect_usage_error({"--load-timeout", "0"});
}
TEST_F(ConfigTest, NegativeStopGraceIsRefused) {
  expect_usage_error({"--stop-grace", "-1"});
}
TEST_F(ConfigTest, MissingExtraModelsDirIsRefused) {
  expect_usage_error({"--extra-models-dir", "/nonexistent/lemon-extra-models"});
}
TEST_F(ConfigTest, ExtraModelsDirThatIsAFileIsRefused) {
  expect_usage_error({"--extra-models-dir", tmp_.write("file").string()});
}
TEST_F(ConfigTest, UnknownFlagIsRefused) {
  expect_usage_error({"--no-such-flag"});
}
TEST_F(ConfigTest, StrayPositionalIsRefused) {
  expect_usage_error({"serve"});
}
TEST_F(ConfigTest, MissingValueIsRefused) {
  expect_usage_error({"--port"});
}

TEST_F(ConfigTest, ZeroStopGraceIsAllowed) {
  EXPECT_EQ(parse_ok({"--stop-grace", "0"}).backends.stop_grace, 0ms);
}

TEST_F(ConfigTest, FractionalLoadTimeout) {
  EXPECT_EQ(parse_ok({"--load-timeout", "0.25"}).backends.load_timeout, 250ms);
}

// ---- flag > environment > default ---------------------------------------------------------------

// The limits against slow and hostile clients and overload (issue #11 §3,
// §3a, §6): their documented defaults, each variable, and the flag over it.
TEST_F(ConfigTest, HardeningLimitsHaveDefaultsVariablesAndFlags) {
  DaemonOptions d = parse_ok({});
  EXPECT_EQ(d.http.server.header_timeout, 10s);
  EXPECT_EQ(d.http.server.body_idle_timeout, 30s);
  EXPECT_EQ(d.http.server.body_min_rate, 1024u);
  EXPECT_EQ(d.http.server.keep_alive_timeout, 60s);
  EXPECT_EQ(d.http.server.write_timeout, 60s);
  EXPECT_EQ(d.app.drain_timeout, 30s);
  EXPECT_EQ(d.forward.request_timeout, 0ms);
  EXPECT_EQ(d.forward.stream_idle_timeout, 0ms);
  EXPECT_EQ(d.http.server.max_connections, 1024);
  EXPECT_EQ(d.http.server.max_connections_per_client, 256);
  EXPECT_EQ(d.http.server.max_request_memory, std::size_t{256} << 20);
  EXPECT_EQ(d.forward.max_response_bytes, std::size_t{256} << 20);
  EXPECT_EQ(d.router.max_queued_per_model, 256);
  EXPECT_EQ(d.router.max_queued_total, 1024);

  env_.set("LEMONADE_HEADER_TIMEOUT", "3");
  env_.set("LEMONADE_BODY_TIMEOUT", "4.5");
  env_.set("LEMONADE_BODY_MIN_RATE", "0");
  env_.set("LEMONADE_KEEP_ALIVE_TIMEOUT", "7");
  env_.set("LEMONADE_WRITE_TIMEOUT", "8");
  env_.set("LEMONADE_DRAIN_TIMEOUT", "0");
  env_.set("LEMONADE_REQUEST_TIMEOUT", "120");
  env_.set("LEMONADE_STREAM_IDLE_TIMEOUT", "15");
  env_.set("LEMONADE_MAX_CONNECTIONS_PER_CLIENT", "16");
  env_.set("LEMONADE_MAX_REQUEST_MEMORY", "32");
  env_.set("LEMONADE_MAX_RESPONSE_SIZE", "8");
  env_.set("LEMONADE_MAX_QUEUED_REQUESTS", "5");
  env_.set("LEMONADE_MAX_QUEUED_REQUESTS_TOTAL", "9");
  DaemonOptions e = parse_ok({});
  EXPECT_EQ(e.http.server.header_timeout, 3s);
  EXPECT_EQ(e.http.server.body_idle_timeout, 4500ms);
  EXPECT_EQ(e.http.server.body_min_rate, 0u);
  EXPECT_EQ(e.http.server.keep_alive_timeout, 7s);
  EXPECT_EQ(e.http.server.write_timeout, 8s);
  EXPECT_EQ(e.app.drain_timeout, 0ms);
  EXPECT_EQ(e.forward.request_timeout, 120s);
  EXPECT_EQ(e.forward.stream_idle_timeout, 15s);
  EXPECT_EQ(e.http.server.max_connections_per_client, 16);
  EXPECT_EQ(e.http.server.max_request_memory, std::size_t{32} << 20);
  EXPECT_EQ(e.forward.max_response_bytes, std::size_t{8} << 20);
  EXPECT_EQ(e.router.max_queued_per_model, 5);
  EXPECT_EQ(e.router.max_queued_total, 9);

  DaemonOptions f = parse_ok({"--header-timeout", "2", "--write-timeout", "1",
                              "--max-queued-requests", "3", "--max-request-memory", "64"});
  EXPECT_EQ(f.http.server.header_timeout, 2s);
  EXPECT_EQ(f.http.server.write_timeout, 1s);
  EXPECT_EQ(f.router.max_queued_per_model, 3);
  EXPECT_EQ(f.http.server.max_request_memory, std::size_t{64} << 20);
  EXPECT_EQ(f.http.server.body_idle_timeout, 4500ms)
      << "the variable still applies where no flag is given";

  expect_usage_error({"--header-timeout", "0"});
  expect_usage_error({"--body-min-rate", "-1"});
  expect_usage_error({"--max-connections-per-client", "0"});
}

TEST_F(ConfigTest, PortFromEnvironmentAndFlag) {
  env_.set("LEMONADE_PORT", "9201");
  EXPECT_EQ(parse_ok({}).http.port, 9201);
  EXPECT_EQ(parse_ok({"--port", "9202"}).http.port, 9202);
}

TEST_F(ConfigTest, CtxSizeFromEnvironmentAndFlag) {
  env_.set("LEMONADE_CTX_SIZE", "16384");
  EXPECT_EQ(parse_ok({}).router.cli_options.ctx_size(), 16384);
  EXPECT_EQ(parse_ok({"--ctx-size", "2048"}).router.cli_options.ctx_size(), 2048);
}

TEST_F(ConfigTest, MaxLoadedModelsFromEnvironmentAndFlag) {
  env_.set("LEMONADE_MAX_LOADED_MODELS", "3");
  expect_limits(parse_ok({}).router.limits, {3, 3, 3, 3, 3});
  expect_limits(parse_ok({"--max-loaded-models", "2"}).router.limits, {2, 2, 2, 2, 2});
}

TEST_F(ConfigTest, MaxLoadedModelsListFromEnvironment) {
  env_.set("LEMONADE_MAX_LOADED_MODELS", "2 1 3");
  expect_limits(parse_ok({}).router.limits, {2, 1, 3, 1, 1});
}

TEST_F(ConfigTest, LlamacppBackendFromEnvironmentAndFlag) {
  env_.set("LEMONADE_LLAMACPP", "rocm");
  EXPECT_EQ(parse_ok({}).router.cli_options.string_value("llamacpp_backend"), "rocm");
  EXPECT_EQ(parse_ok({"--llamacpp", "cpu"}).router.cli_options.string_value("llamacpp_backend"),
            "cpu");
}

TEST_F(ConfigTest, LoadTimeoutFromEnvironmentAndFlag) {
  env_.set("LEMONADE_LOAD_TIMEOUT", "12");
  EXPECT_EQ(parse_ok({}).backends.load_timeout, 12s);
  EXPECT_EQ(parse_ok({"--load-timeout", "30"}).backends.load_timeout, 30s);
}

TEST_F(ConfigTest, BackendIdleTimeoutDefaultsToTenMinutesFromEnvironmentAndFlag) {
  EXPECT_EQ(parse_ok({}).forward.backend_idle_timeout, 600s);
  env_.set("LEMONADE_BACKEND_IDLE_TIMEOUT", "0");
  EXPECT_EQ(parse_ok({}).forward.backend_idle_timeout, 0ms);  // off
  EXPECT_EQ(parse_ok({"--backend-idle-timeout", "2.5"}).forward.backend_idle_timeout, 2500ms);
  expect_usage_error({"--backend-idle-timeout", "-1"});
}

TEST_F(ConfigTest, StopGraceFromEnvironmentAndFlag) {
  env_.set("LEMONADE_STOP_GRACE", "0.5");
  EXPECT_EQ(parse_ok({}).backends.stop_grace, 500ms);
  EXPECT_EQ(parse_ok({"--stop-grace", "2"}).backends.stop_grace, 2s);
}

TEST_F(ConfigTest, InvalidEnvironmentValueIsAUsageError) {
  env_.set("LEMONADE_PORT", "not-a-port");
  expect_usage_error({});
}

TEST_F(ConfigTest, InvalidEnvironmentValueIsIgnoredWhenTheFlagIsGiven) {
  env_.set("LEMONADE_LLAMACPP", "bogus");
  EXPECT_EQ(parse_ok({"--llamacpp", "vulkan"}).router.cli_options.string_value("llamacpp_backend"),
            "vulkan");
}

// ---- cache directories
// -----------------------------------------------------------------------------

TEST_F(ConfigTest, CacheDirDefaultsUnderHome) {
  DaemonOptions c = parse_ok({});
  EXPECT_EQ(c.app.cache_dir, "/home/lemon-test/.cache/lemonade");
  EXPECT_EQ(c.app.hf_hub_cache, "/home/lemon-test/.cache/huggingface/hub");
}

TEST_F(ConfigTest, LemonadeCacheDirFromEnvironment) {
  env_.set("LEMONADE_CACHE_DIR", "/srv/lemonade-cache");
  EXPECT_EQ(parse_ok({}).app.cache_dir, "/srv/lemonade-cache");
}

TEST_F(ConfigTest, HfHomeGivesItsHubDir) {
  env_.set("HF_HOME", "/srv/hf");
  EXPECT_EQ(parse_ok({}).app.hf_hub_cache, "/srv/hf/hub");
}

TEST_F(ConfigTest, HfHubCacheWinsOverHfHome) {
  env_.set("HF_HOME", "/srv/hf");
  env_.set("HF_HUB_CACHE", "/srv/hub-cache");
  EXPECT_EQ(parse_ok({}).app.hf_hub_cache, "/srv/hub-cache");
}

TEST_F(ConfigTest, EmptyVariablesCountAsUnset) {
  env_.set("HF_HUB_CACHE", "");
  env_.set("HF_HOME", "");
  env_.set("LEMONADE_CACHE_DIR", "");
  DaemonOptions c = parse_ok({});
  EXPECT_EQ(c.app.hf_hub_cache, "/home/lemon-test/.cache/huggingface/hub");
  EXPECT_EQ(c.app.cache_dir, "/home/lemon-test/.cache/lemonade");
}

TEST_F(ConfigTest, ResourcesDirHoldsTheModelRegistry) {
  DaemonOptions c = parse_ok({});
  EXPECT_TRUE(fs::exists(fs::path(c.app.resources_dir) / "server_models.json"))
      << c.app.resources_dir;
}

// ---- --help and --version
// --------------------------------------------------------------------------

// --ollama-port (issue #14 §4): off by default, 11434 without a value.
TEST_F(ConfigTest, OllamaPort) {
  env_.unset("LEMONADE_OLLAMA_PORT");
  EXPECT_FALSE(parse_ok({}).http.ollama_port.has_value());
  EXPECT_EQ(parse_ok({"--ollama-port"}).http.ollama_port, 11434);
  EXPECT_EQ(parse_ok({"--ollama-port", "--port", "9000"}).http.ollama_port, 11434);
  EXPECT_EQ(parse_ok({"--ollama-port", "11500"}).http.ollama_port, 11500);
  EXPECT_EQ(parse_ok({"--ollama-port", "0"}).http.ollama_port, 0);
  expect_usage_error({"--ollama-port", "70000"});
  expect_usage_error({"--ollama-port", "x"});
  env_.set("LEMONADE_OLLAMA_PORT", "11999");
  EXPECT_EQ(parse_ok({}).http.ollama_port, 11999);
  EXPECT_EQ(parse_ok({"--ollama-port", "12000"}).http.ollama_port, 12000);
}

// --websocket-port: a second listener for the WebSocket routes,
// on any free port by default; config.json's websocket_port takes a number.
TEST_F(ConfigTest, WebSocketPort) {
  env_.unset("LEMONADE_WEBSOCKET_PORT");
  EXPECT_EQ(parse_ok({}).http.websocket_port, 0) << "auto: any free port";
  EXPECT_EQ(parse_ok({"--websocket-port", "auto"}).http.websocket_port, 0);
  EXPECT_FALSE(parse_ok({"--websocket-port", "off"}).http.websocket_port.has_value());
  EXPECT_EQ(parse_ok({"--websocket-port", "9001"}).http.websocket_port, 9001);
  expect_usage_error({"--websocket-port", "70000"});
  expect_usage_error({"--websocket-port", "on"});
  expect_usage_error({"--websocket-port", ""});
  env_.set("LEMONADE_WEBSOCKET_PORT", "off");
  EXPECT_FALSE(parse_ok({}).http.websocket_port.has_value());
  EXPECT_EQ(parse_ok({"--websocket-port", "9002"}).http.websocket_port, 9002);
  env_.unset("LEMONADE_WEBSOCKET_PORT");
  ParsedConfig from_file = parse_config(std::vector<std::string>{"lemonade-router"},
                                        nlohmann::json{{"websocket_port", 9003}});
  ASSERT_FALSE(from_file.exit_now) << from_file.message;
  EXPECT_EQ(from_file.options.http.websocket_port, 9003);
  EXPECT_EQ(from_file.provenance.sources.at("websocket_port"), "config.json");
}

TEST_F(ConfigTest, HelpExitsWithZero) {
  std::string out = expect_exit_zero({"--help"});
  EXPECT_NE(out.find("--max-loaded-models"), std::string::npos) << out;
}

TEST_F(ConfigTest, VersionExitsWithZero) {
  std::string out = expect_exit_zero({"--version"});
  EXPECT_NE(out.find("lemonade-router"), std::string::npos) << out;
}

TEST_F(ConfigTest, HelpWinsOverOtherFlags) {
  expect_exit_zero({"--port", "9000", "--help"});
}

}  // namespace
}  // namespace lemon
