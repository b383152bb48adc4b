// Lemonade 11's config.json read as ours: its keys translated or listed as
// not applied, the file found in the cache folder when the config folder
// has none, the keys with a counterpart bound into the layers' options, and
// the settings shown in 11's raw shape.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lemon/app/daemon_options.h"
#include "lemon/options/config_file.h"
#include "lemon/options/lemonade11_config.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ScopedEnv;
using testing::TempDir;

bool has(const std::vector<std::string>& list, const std::string& key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

TEST(Lemonade11Keys, AreTranslatedOrListedAsNotApplied) {
  const json file = {{"global_timeout", 300},
                     {"ctx_size", -1},
                     {"log_level", "fatal"},
                     {"telemetry", {{"enabled", false}}},
                     {"flm", {{"args", ""}, {"prefer_system", false}}},
                     {"llamacpp",
                      {{"backend", "auto"},
                       {"cpu_args", "-t 4"},
                       {"args", "--mlock"},
                       {"prefer_system", false},
                       {"cpu_bin", "builtin"}}},
                     {"port", 9000},
                     {"whispercpp", {{"backend", "npu"}}}};
  const Lemonade11Reading r = read_lemonade11_keys(file);
  EXPECT_EQ(r.settings["request_timeout"], 300);
  EXPECT_FALSE(r.settings.contains("global_timeout"));
  EXPECT_EQ(r.settings["ctx_size"], "auto") << "size-to-fit: the context fitted to memory";
  EXPECT_EQ(r.settings["log_level"], "critical");
  EXPECT_FALSE(r.settings.contains("telemetry"));
  EXPECT_FALSE(r.settings.contains("flm"));
  EXPECT_EQ(r.settings["llamacpp"],
            (json{{"args", "--mlock"}, {"prefer_system", "false"}, {"cpu_bin", "builtin"}}));
  EXPECT_EQ(r.settings["port"], 9000) << "our own keys pass as they are";
  EXPECT_EQ(r.settings["whispercpp"]["backend"], "npu");
  for (const char* key : {"telemetry", "flm.args", "flm.prefer_system", "llamacpp.cpu_args"}) {
    EXPECT_TRUE(has(r.not_applied, key)) << key;
  }
  EXPECT_FALSE(has(r.not_applied, "global_timeout")) << "applied as request_timeout";

  const Lemonade11Reading both =
      read_lemonade11_keys({{"global_timeout", 300}, {"request_timeout", 5}});
  EXPECT_EQ(both.settings["request_timeout"], 5) << "our own key wins";
  EXPECT_TRUE(has(both.not_applied, "global_timeout"));
}

TEST(Lemonade11Keys, BroadcastFalseTurnsTheBeaconOff) {
  EXPECT_EQ(read_lemonade11_keys({{"broadcast", false}}).settings["no_broadcast"], true);
  EXPECT_EQ(read_lemonade11_keys({{"broadcast", true}}).settings["no_broadcast"], false);
  const Lemonade11Reading both =
      read_lemonade11_keys({{"broadcast", true}, {"no_broadcast", true}});
  EXPECT_EQ(both.settings["no_broadcast"], true) << "our own key wins";
  EXPECT_TRUE(has(both.not_applied, "broadcast"));
  EXPECT_FALSE(has(lemonade11_unapplied_keys(), "broadcast"));
}

TEST(Lemonade11Keys, EveryUnappliedKeyIsDocumented) {
  const std::vector<std::string>& keys = lemonade11_unapplied_keys();
  EXPECT_TRUE(has(keys, "telemetry"));
  EXPECT_TRUE(has(keys, "sdcpp.cuda_args"));
  EXPECT_FALSE(has(keys, "offline"));
  EXPECT_FALSE(has(keys, "llamacpp.cpu_bin"));
  EXPECT_FALSE(has(keys, "auto_evict"));
  std::ifstream in(std::string(LEMON_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream page;
  page << in.rdbuf();
  const std::string text = page.str();
  const auto section = text.find("## Lemonade 11's config.json");
  ASSERT_NE(section, std::string::npos);
  const std::string part = text.substr(section, text.find("\n## ", section + 1) - section);
  for (const auto& key : keys) {
    EXPECT_NE(part.find("`" + key + "`"), std::string::npos)
        << key << " is not listed in docs/configuration.md";
  }
}

TEST(Lemonade11Keys, SettingsShowInTheRawShape) {
  const json config = settings_as_config({{"port", "8000"},
                                          {"stop_grace", "2.5"},
                                          {"request_timeout", "600"},
                                          {"offline", "true"},
                                          {"max_loaded_models", "2 1"},
                                          {"llamacpp.backend", "cpu"},
                                          {"llamacpp.prefer_system", "false"},
                                          {"auth", R"({"keys":[]})"},
                                          {"no_such_setting", "x"}});
  EXPECT_EQ(config["port"], 8000);
  EXPECT_EQ(config["stop_grace"], 2.5);
  EXPECT_EQ(config["request_timeout"], 600);
  EXPECT_EQ(config["offline"], true);
  EXPECT_EQ(config["max_loaded_models"], (json{2, 1}));
  EXPECT_EQ(config["llamacpp"], (json{{"backend", "cpu"}, {"prefer_system", false}}));
  EXPECT_EQ(config["auth"], (json{{"keys", json::array()}}));
  EXPECT_FALSE(config.contains("no_such_setting"));
  EXPECT_EQ(settings_as_config({{"max_loaded_models", "3"}})["max_loaded_models"], 3);

  const json defaults = default_settings_as_config();
  EXPECT_EQ(defaults["port"], 8000);
  EXPECT_EQ(defaults["models_dir"], "auto");
  EXPECT_EQ(defaults["sdcpp"]["cpu_bin"], "builtin");
  EXPECT_FALSE(defaults.contains("ready_fd"));
}

class Lemonade11ConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"LEMONADE_OFFLINE", "LEMONADE_REQUEST_TIMEOUT", "LEMONADE_LLAMACPP_CPU_BIN",
          "LEMONADE_MODELS_DIR", "LEMONADE_DEFAULT_MODEL_SOURCE", "LEMONADE_LOG_LEVEL"}) {
      env_.unset(name);
    }
    env_.set("HOME", tmp_.path().string());
    env_.set("LEMONADE_CONFIG_DIR", (tmp_.path() / "conf").string());
    env_.set("LEMONADE_CACHE_DIR", (tmp_.path() / "cache").string());
    env_.set("LEMONADE_DEFAULTS_FILE", (tmp_.path() / "defaults.json").string());
  }
  static ParsedConfig parse() { return parse_config(std::vector<std::string>{"lemonade-router"}); }

  TempDir tmp_{"lemon-l11-config"};
  ScopedEnv env_;
};

TEST_F(Lemonade11ConfigFile, TheCacheFoldersFileIsReadWhenOursIsAbsent) {
  const std::string bin = (tmp_.path() / "opt" / "llama-server").string();
  tmp_.write("cache/config.json", json{{"offline", true},
                                       {"global_timeout", 120},
                                       {"default_model_source", "modelscope"},
                                       {"models_dir", (tmp_.path() / "hub").string()},
                                       {"llamacpp", {{"cpu_bin", bin}, {"prefer_system", false}}},
                                       {"telemetry", {{"enabled", true}}}}
                                      .dump());
  ParsedConfig p = parse();
  ASSERT_FALSE(p.exit_now) << p.message;
  EXPECT_EQ(p.provenance.config_file, (tmp_.path() / "cache" / "config.json").string());
  EXPECT_TRUE(p.provenance.ignored_config_file.empty());
  EXPECT_TRUE(p.options.app.offline);
  EXPECT_EQ(p.options.forward.request_timeout, 120s);
  EXPECT_EQ(p.options.lemonade.default_model_source, "modelscope");
  EXPECT_EQ(p.options.app.hf_hub_cache, (tmp_.path() / "hub").string());
  EXPECT_EQ(p.options.catalogue.hf_hub_cache, (tmp_.path() / "hub").string());
  EXPECT_EQ(p.options.backends.binaries.paths.at("LEMONADE_LLAMACPP_CPU_BIN"), bin);
  EXPECT_TRUE(p.options.backends.binaries.installed_first.contains("llamacpp"));
  EXPECT_TRUE(has(p.provenance.not_applied, "telemetry"));
}

TEST_F(Lemonade11ConfigFile, OursWinsWhenBothExistAndTheOtherIsNamed) {
  tmp_.write("cache/config.json", json{{"log_level", "warning"}}.dump());
  tmp_.write("conf/config.json", json{{"log_level", "debug"}}.dump());
  ParsedConfig p = parse();
  ASSERT_FALSE(p.exit_now) << p.message;
  EXPECT_EQ(p.options.app.log_level, "debug");
  EXPECT_EQ(p.provenance.config_file, (tmp_.path() / "conf" / "config.json").string());
  EXPECT_EQ(p.provenance.ignored_config_file, (tmp_.path() / "cache" / "config.json").string());
}

TEST_F(Lemonade11ConfigFile, BuiltinBinariesKeepTheSearchAndAnUnknownKeyStillStops) {
  tmp_.write("conf/config.json",
             json{{"llamacpp", {{"cpu_bin", "builtin"}, {"vulkan_bin", "b4000"}}}}.dump());
  ParsedConfig p = parse();
  ASSERT_FALSE(p.exit_now) << p.message;
  EXPECT_TRUE(p.options.backends.binaries.paths.empty());
  EXPECT_TRUE(p.options.backends.binaries.installed_first.empty()) << "prefer_system: true";

  tmp_.write("conf/config.json", json{{"telemetry", {}}, {"brodcast", true}}.dump());
  ParsedConfig refused = parse();
  EXPECT_TRUE(refused.exit_now);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.message.find("'brodcast'"), std::string::npos) << refused.message;
}

}  // namespace
}  // namespace lemon
