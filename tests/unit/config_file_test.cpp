// config.json and the defaults file (issue #30 §1): each kind of setting
// (integer, number, text, flag, list, sectioned) read from the file, the
// layering defaults < defaults file < config.json < environment < flag, the
// source of every setting, and errors that name the file and the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lemon/app/config_reloader.h"
#include "lemon/app/daemon_options.h"
#include "lemon/options/config_file.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;
using testing::TempDir;

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"LEMONADE_PORT", "LEMONADE_KEEP_ALIVE", "LEMONADE_LOG_LEVEL",
                             "LEMONADE_MAX_LOADED_MODELS", "LEMONADE_LLAMACPP_ARGS",
                             "LEMONADE_DEFAULT_MODEL", "LEMONADE_CTX_SIZE", "LEMONADE_STEPS"}) {
      env_.unset(name);
    }
    env_.set("HOME", tmp_.path().string());
    env_.set("LEMONADE_CONFIG_DIR", (tmp_.path() / "conf").string());
    env_.set("LEMONADE_DEFAULTS_FILE", (tmp_.path() / "defaults.json").string());
  }
  void write_config(const nlohmann::json& j) { tmp_.write("conf/config.json", j.dump()); }

  static ParsedConfig parse(std::vector<std::string> args = {}) {
    args.insert(args.begin(), "lemonade-router");
    return parse_config(args);
  }
  // A file that must be refused: exit code 2, one line naming the file and `path`.
  void expect_refused(const nlohmann::json& file, const std::string& path) {
    write_config(file);
    ParsedConfig p = parse();
    EXPECT_TRUE(p.exit_now) << file.dump();
    EXPECT_EQ(p.exit_code, 2) << file.dump();
    EXPECT_NE(p.message.find("config.json"), std::string::npos) << p.message;
    EXPECT_NE(p.message.find("'" + path + "'"), std::string::npos) << p.message;
    EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
  }

  TempDir tmp_{"lemon-config-file"};
  ScopedEnv env_;
};

TEST_F(ConfigFileTest, EveryKindOfSettingIsReadFromTheFile) {
  write_config({{"port", 9001},                                           // integer
                {"stop_grace", 2.5},                                      // number
                {"keep_alive", "5m"},                                     // text
                {"no_broadcast", true},                                   // flag
                {"max_loaded_models", {2, 1, 1, 1, 1}},                   // list
                {"default_model", {"a", "b"}},                            // comma-separated list
                {"llamacpp", {{"backend", "cpu"}, {"args", "--mlock"}}},  // sectioned
                {"sdcpp", {{"steps", 4}}},
                {"ctx_size", 8192}});
  ParsedConfig p = parse();
  ASSERT_FALSE(p.exit_now) << p.message;
  const DaemonOptions& c = p.options;
  EXPECT_EQ(c.http.port, 9001);
  EXPECT_EQ(c.backends.stop_grace, 2500ms);
  ASSERT_TRUE(c.router.keep_alive.has_value());
  EXPECT_EQ(*c.router.keep_alive, 300s);
  EXPECT_TRUE(c.app.no_broadcast);
  EXPECT_EQ(c.router.limits.limit(ModelType::kLlm), 2);
  EXPECT_EQ(c.router.limits.limit(ModelType::kEmbedding), 1);
  EXPECT_EQ(c.router.default_models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.router.cli_options.string_value("llamacpp_backend"), "cpu");
  EXPECT_EQ(c.router.cli_options.string_value("llamacpp_args"), "--mlock");
  EXPECT_EQ(c.router.cli_options.raw().value("steps", 0), 4);
  EXPECT_EQ(c.router.cli_options.ctx_size(), 8192);
  EXPECT_EQ(p.provenance.sources.at("port"), "config.json");
  EXPECT_EQ(p.provenance.sources.at("llamacpp.args"), "config.json");
  EXPECT_EQ(p.provenance.sources.at("host"), "default");
}

TEST_F(ConfigFileTest, DefaultsFileThenConfigJsonThenEnvironmentThenFlags) {
  tmp_.write("defaults.json",
             nlohmann::json{
                 {"port", 9000}, {"log_level", "warning"}, {"ctx_size", 2048}, {"keep_alive", 60}}
                 .dump());
  write_config({{"port", 9001}, {"log_level", "debug"}, {"ctx_size", 8192}});
  env_.set("LEMONADE_PORT", "9002");
  env_.set("LEMONADE_LOG_LEVEL", "error");
  ParsedConfig p = parse({"--port", "9003"});
  ASSERT_FALSE(p.exit_now) << p.message;
  const DaemonOptions& c = p.options;
  EXPECT_EQ(c.http.port, 9003);
  EXPECT_EQ(p.provenance.sources.at("port"), "flag");
  EXPECT_EQ(c.app.log_level, "error");
  EXPECT_EQ(p.provenance.sources.at("log_level"), "environment");
  EXPECT_EQ(c.router.cli_options.ctx_size(), 8192);
  EXPECT_EQ(p.provenance.sources.at("ctx_size"), "config.json");
  ASSERT_TRUE(c.router.keep_alive.has_value());
  EXPECT_EQ(*c.router.keep_alive, 60s);
  EXPECT_EQ(p.provenance.sources.at("keep_alive"), "defaults file");
  EXPECT_EQ(p.provenance.config_file, (tmp_.path() / "conf" / "config.json").string());
}

TEST_F(ConfigFileTest, NoFileIsAnEmptyOne) {
  ParsedConfig p = parse();
  ASSERT_FALSE(p.exit_now) << p.message;
  EXPECT_EQ(p.options.http.port, 8000);
  EXPECT_EQ(p.provenance.sources.at("port"), "default");
}

TEST_F(ConfigFileTest, ErrorsNameTheFileAndTheKey) {
  expect_refused({{"prot", 1}}, "prot");
  expect_refused({{"port", "8000"}}, "port");  // a string for an integer
  expect_refused({{"port", 70000}}, "port");   // out of its range
  expect_refused({{"stop_grace", "soon"}}, "stop_grace");
  expect_refused({{"no_broadcast", 1}}, "no_broadcast");  // a number for a flag
  expect_refused({{"log_level", "loud"}}, "log_level");
  expect_refused({{"llamacpp", {{"backend", "cuda-13"}}}}, "llamacpp.backend");
  expect_refused({{"sdcpp", {{"stepz", 3}}}}, "sdcpp.stepz");
  expect_refused({{"llamacpp", "cpu"}}, "llamacpp");  // a section must be an object
  expect_refused({{"steps", 4}}, "steps");            // only under sdcpp
  expect_refused({{"ready_fd", 3}}, "ready_fd");      // no setting
  // A control character in a key stays on the one line, escaped (found by
  // fuzz_config_file).
  expect_refused({{"llamacpp", {{"back\nd", "cpu"}}}}, "llamacpp.back\\nd");
  for (const std::string text : {"{\"port\": 1", "[1, 2]", "\"port\""}) {
    tmp_.write("conf/config.json", text);
    ParsedConfig p = parse();
    EXPECT_EQ(p.exit_code, 2) << text;
    EXPECT_NE(p.message.find("config.json"), std::string::npos) << p.message;
    EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
  }
}

TEST_F(ConfigFileTest, KeysFollowTheFlags) {
  EXPECT_EQ(config_key_of_flag("--keep-alive"), "keep_alive");
  EXPECT_EQ(config_key_of_flag("--max-queued-requests"), "max_queued_requests");
  EXPECT_EQ(config_key_of_flag("--llamacpp"), "llamacpp.backend");
  EXPECT_EQ(config_key_of_flag("--llamacpp-args"), "llamacpp.args");
  EXPECT_EQ(config_key_of_flag("--cfg-scale"), "sdcpp.cfg_scale");
  EXPECT_EQ(config_key_of_flag("--whispercpp"), "whispercpp.backend");
  EXPECT_EQ(config_key_of_flag("--ready-fd"), "");
  EXPECT_EQ(config_key_of_flag("--help"), "");
}

TEST(ClassifyConfigChanges, LiveSettingsApplyTheRestWaitsForARestart) {
  const std::map<std::string, std::string> running = {
      {"log_level", "info"}, {"port", "8000"}, {"keep_alive", "-1"}, {"host", "127.0.0.1"}};
  std::map<std::string, std::string> read = running;
  EXPECT_TRUE(classify_config_changes(running, read, {"log_level"}).applied.empty());
  EXPECT_TRUE(classify_config_changes(running, read, {"log_level"}).pending.empty());
  read["log_level"] = "debug";
  read["port"] = "9000";
  read["keep_alive"] = "300";
  const ConfigChanges c = classify_config_changes(running, read, {"log_level", "keep_alive"});
  EXPECT_EQ(c.applied, (std::vector<std::string>{"keep_alive", "log_level"}));
  EXPECT_EQ(c.pending, (std::vector<std::string>{"port"}));
}

TEST(ConfigChanges, TheMemoryBudgetsSizeIsLiveButTurningItOnOrOffIsNot) {
  const std::set<std::string> live = {"memory_budget"};
  auto change = [&](const std::string& from, const std::string& to) {
    return classify_config_changes({{"memory_budget", from}}, {{"memory_budget", to}}, live);
  };
  EXPECT_EQ(change("80%", "60%").applied, (std::vector<std::string>{"memory_budget"}));
  EXPECT_EQ(change("80%", "off").pending, (std::vector<std::string>{"memory_budget"}));
  EXPECT_EQ(change("off", "24G").pending, (std::vector<std::string>{"memory_budget"}));
  EXPECT_TRUE(change("off", "off").applied.empty());
}

}  // namespace
}  // namespace lemon
