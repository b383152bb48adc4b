// `lemonade launch AGENT` with fake agents on PATH that record their
// environment and arguments (no user file written), `launch --print`, and
// `lemond`, Lemonade 11's name for the router: cache_dir, --port and --host
// saved to config.json, the router run in its place.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "integration/lemonade_cli_support.h"
#include "support/http_client.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LemonadeLaunchTest : public LemonadeCliTest {
 protected:
  void SetUp() override {
    LemonadeCliTest::SetUp();
    env_.add_llm("a");
    fs::create_directories(bin_dir());
    for (const char* agent : {"claude", "codex", "opencode", "pi"}) {
      const fs::path script = fs::path(bin_dir()) / agent;
      // Records what it was given, then exits 7 (lemonade's exit code).
      std::ofstream(script) << "#!/bin/sh\nenv > \"$0.env\"\nfor a in \"$@\"; do printf '%s\\n' "
                               "\"$a\"; done > \"$0.args\"\nexit 7\n";
      fs::permissions(script, fs::perms::owner_all);
    }
  }
  std::string bin_dir() const { return env_.root() + "/agents"; }
  CliResult launch(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& extra = {}) const {
    auto env = extra;
    env["PATH"] = bin_dir() + ":/usr/bin:/bin";
    return lemonade_at(args, env);
  }
  std::string agent_env(const std::string& agent) const {
    return read_text(fs::path(bin_dir()) / (agent + ".env"));
  }
  std::string agent_args(const std::string& agent) const {
    return read_text(fs::path(bin_dir()) / (agent + ".args"));
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port()); }
};

TEST_F(LemonadeLaunchTest, ClaudeGetsTheAnthropicSettingsAndItsExitCodeIsLemonades) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r =
      launch({"launch", "claude", "--model", "user.a", "--agent-args", "--verbose 'two words'"},
             {{"LEMONADE_API_KEY", "k1"}});
  EXPECT_EQ(r.code, 7) << r.out << r.err;
  EXPECT_TRUE(has_text(r.out, "Launching claude...")) << r.out;
  const std::string env = agent_env("claude");
  EXPECT_TRUE(has_text(env, "ANTHROPIC_BASE_URL=" + base() + "\n")) << env;
  EXPECT_TRUE(has_text(env, "ANTHROPIC_AUTH_TOKEN=k1\n")) << env;
  EXPECT_TRUE(has_text(env, "ANTHROPIC_DEFAULT_SONNET_MODEL=user.a\n")) << env;
  EXPECT_TRUE(has_text(env, "LEMONADE_API_KEY=k1\n")) << env;
  EXPECT_EQ(agent_args("claude"), "--verbose\ntwo words\n");
  EXPECT_FALSE(fs::exists(env_.root() + "/home/.claude")) << "no user file";
}

TEST_F(LemonadeLaunchTest, CodexOpencodeAndPiGetTheOpenAiSettings) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_EQ(launch({"launch", "codex", "-m", "user.a"}).code, 7);
  const std::string codex = agent_args("codex");
  EXPECT_TRUE(has_text(codex, "base_url='" + base() + "/v1'")) << codex;
  EXPECT_TRUE(has_text(codex, "model_provider=\"lemonade\"\n")) << codex;
  EXPECT_TRUE(has_text(codex, "-m\nuser.a\n")) << codex;
  EXPECT_TRUE(has_text(agent_env("codex"), "OPENAI_API_KEY=lemonade\n"));

  EXPECT_EQ(launch({"launch", "codex", "-m", "user.a", "--provider", "mine"}).code, 7);
  EXPECT_FALSE(has_text(agent_args("codex"), "model_providers.lemonade")) << "codex's own";
  EXPECT_TRUE(has_text(agent_args("codex"), "model_provider=\"mine\"\n"));

  EXPECT_EQ(launch({"launch", "opencode", "-m", "user.a"}).code, 7);
  EXPECT_EQ(agent_args("opencode"), "-m\nLemonade/user.a\n");
  const std::string opencode = agent_env("opencode");
  const auto at = opencode.find("OPENCODE_CONFIG_CONTENT=");
  ASSERT_NE(at, std::string::npos) << opencode;
  const json config = json::parse(opencode.substr(at + 24, opencode.find('\n', at) - at - 24));
  EXPECT_EQ(config["provider"]["Lemonade"]["options"]["baseURL"], base() + "/v1");

  EXPECT_EQ(launch({"launch", "pi", "-m", "user.a"}).code, 7);
  EXPECT_EQ(agent_args("pi"), "--provider\nLemonade\n--model\nuser.a\n");
  const std::string pi_dir = env_.cache_dir() + "/agents/pi";
  EXPECT_TRUE(has_text(agent_env("pi"), "PI_CODING_AGENT_DIR=" + pi_dir + "\n"));
  const json models = json::parse(read_text(pi_dir + "/models.json"));
  EXPECT_EQ(models["providers"]["Lemonade"]["baseUrl"], base() + "/v1");
  EXPECT_FALSE(fs::exists(env_.root() + "/home/.pi")) << "the user's pi folder is untouched";
}

TEST_F(LemonadeLaunchTest, PrintShowsTheSettingsAndLaunchesNothing) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r = launch({"launch", "claude", "-m", "user.a", "--print"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has_text(r.out, "ANTHROPIC_BASE_URL=" + base() + "\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\nclaude\n")) << r.out;
  EXPECT_FALSE(fs::exists(fs::path(bin_dir()) / "claude.env")) << "not launched";
}

TEST_F(LemonadeLaunchTest, WithoutAModelOrATerminalItFailsWithTheList) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r = launch({"launch", "claude"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "Error: name a model with --model: a\n") << "user.a, as 11 lists it";
  auto provider = launch({"launch", "claude", "-m", "user.a", "-p", "x"});
  EXPECT_EQ(provider.code, 1);
  EXPECT_TRUE(has_text(provider.err, "only supported for 'lemonade launch codex'")) << provider.err;
  auto missing = lemonade_at({"launch", "claude", "-m", "user.a"}, {{"PATH", "/usr/bin:/bin"}});
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(has_text(missing.err, "claude was not found")) << missing.err;
}

TEST_F(LemonadeCliTest, LemondSavesPortAndHostAndRunsTheRouter) {
  const std::string cache = env_.root() + "/lemond-cache";
  auto env = env_.router_env();
  env["LEMONADE_BEACON_PORT"] = beacon_port_;
  RouterProcess lemond({cache, "--port", "0", "--host", "127.0.0.1", "--log-level", "debug"}, env,
                       {}, lemond_binary());
  const int listening = lemond.wait_listening();
  ASSERT_GT(listening, 0) << lemond.log_text();
  const json saved = json::parse(read_text(cache + "/config.json"));
  EXPECT_EQ(saved["port"], 0);
  EXPECT_EQ(saved["host"], "127.0.0.1");
  const json view = http_get(listening, "/internal/config?sources=1").json();
  EXPECT_EQ(view["config_file"], cache + "/config.json") << "cache_dir is the router's";
  EXPECT_EQ(view["settings"]["log_level"]["source"], "flag") << "other options passed on";
  // Its beacon finds it.
  auto status = lemonade({"status", "--json"});
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_EQ(json::parse(status.out)["port"], listening);
  lemond.kill_and_reap();

  auto version = run_cli({"--version"}, env, "", lemond_binary());
  EXPECT_EQ(version.code, 0);
  EXPECT_TRUE(version.out.starts_with("lemond version ")) << version.out;
  auto both = run_cli({"--broadcast", "--no-broadcast"}, env, "", lemond_binary());
  EXPECT_EQ(both.code, 2);
}

}  // namespace
}  // namespace lemon::testing
