// `lemonade`, Lemonade 11's client, against the real router with the
// fakes: found by the router's loopback beacon without flags (and not with
// --no-broadcast or --no-discovery), LEMONADE_HOST as a URL, keys, and every
// verb's output and exit code.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "integration/lemonade_cli_support.h"
#include "support/http_client.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(LemonadeCliTest, FindsTheRouterByItsBeaconWithoutFlags) {
  ASSERT_NO_FATAL_FAILURE(start_beaconing_router());
  auto r = lemonade({"status"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has_text(r.out, "Server is running on port " + std::to_string(port()))) << r.out;
  EXPECT_TRUE(has_text(r.out, "No models loaded.")) << r.out;
  auto j = lemonade({"status", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out), (json{{"port", port()}}));
}

TEST_F(LemonadeCliTest, NoBroadcastRouterIsNotFound) {
  ASSERT_NO_FATAL_FAILURE(start_beaconing_router({"--no-broadcast"}));
  auto r = lemonade({"status"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has_text(r.err, "Could not connect")) << r.err;
}

TEST_F(LemonadeCliTest, NoDiscoveryDoesNotListen) {
  ASSERT_NO_FATAL_FAILURE(start_beaconing_router());
  auto r = lemonade({"--no-discovery", "status"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has_text(r.err, "Could not connect")) << r.err;
}

TEST_F(LemonadeCliTest, ScanListsTheBeacon) {
  ASSERT_NO_FATAL_FAILURE(start_beaconing_router());
  auto r = lemonade({"scan", "--duration", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has_text(r.out, "at http://127.0.0.1:" + std::to_string(port()) + "/api/v1/"))
      << r.out;
  EXPECT_TRUE(has_text(r.out, "Found 1 beacon(s)")) << r.out;
}

TEST_F(LemonadeCliTest, LemonadeHostIsAUrl) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string p = std::to_string(port());
  auto with_port = lemonade({"status"}, {{"LEMONADE_HOST", "http://127.0.0.1:" + p + "/api/v1"}});
  EXPECT_EQ(with_port.code, 0) << with_port.err;
  EXPECT_TRUE(has_text(with_port.out, "running on port " + p)) << with_port.out;
  auto port_apart =
      lemonade({"status"}, {{"LEMONADE_HOST", "HTTP://localhost"}, {"LEMONADE_PORT", p}});
  EXPECT_EQ(port_apart.code, 0) << port_apart.err;
  auto bad = lemonade({"status"}, {{"LEMONADE_HOST", "http://127.0.0.1:99999"}});
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_TRUE(has_text(bad.err, "invalid port")) << bad.err;
}

TEST_F(LemonadeCliTest, AKeyedServerWithoutTheKeyCannotAuthenticate) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", "s3cret"}));
  auto none = lemonade_at({"status"});
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_TRUE(has_text(none.err, "cannot authenticate")) << none.err;
  auto wrong = lemonade_at({"status", "--json"}, {{"LEMONADE_API_KEY", "nope"}});
  EXPECT_EQ(wrong.code, 1) << wrong.out;
  EXPECT_TRUE(has_text(wrong.err, "cannot authenticate")) << wrong.err;
  EXPECT_EQ(lemonade_at({"status"}, {{"LEMONADE_API_KEY", "s3cret"}}).code, 0);
  EXPECT_EQ(lemonade_at({"--api-key", "s3cret", "status"}).code, 0);
  auto admin =
      lemonade_at({"status"}, {{"LEMONADE_API_KEY", "nope"}, {"LEMONADE_ADMIN_API_KEY", "s3cret"}});
  EXPECT_EQ(admin.code, 0) << admin.err << " (the admin key wins)";
}

TEST_F(LemonadeCliTest, VersionHelpAndUsage) {
  auto version = lemonade({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_TRUE(version.out.starts_with("lemonade version ")) << version.out;
  auto none = lemonade({});
  EXPECT_EQ(none.code, 1);
  EXPECT_TRUE(has_text(none.err, "No command specified")) << none.err;
  auto help = lemonade({"--help-all"});
  EXPECT_EQ(help.code, 0);
  for (const char* verb :
       {"run",  "launch", "chat",   "bench",  "backends", "status",        "logs",
        "scan", "config", "list",   "pull",   "delete",   "load",          "unload",
        "pin",  "unpin",  "import", "export", "alias",    "check-updates", "cleanup-cache"}) {
    EXPECT_TRUE(has_text(help.out, verb)) << verb;
  }
  EXPECT_EQ(lemonade({"load"}).code, 2) << "a missing argument is a usage error";
}

TEST_F(LemonadeCliTest, CloudAndTelemetryAreNotOffered) {
  for (const char* verb : {"cloud", "telemetry"}) {
    auto r = lemonade({verb, "list"});
    EXPECT_EQ(r.code, 2) << verb;
    EXPECT_TRUE(has_text(r.err, "not offered by this server")) << r.err;
  }
}

TEST_F(LemonadeCliTest, ListLoadPinUnpinUnload) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto list = lemonade_at({"list"});
  ASSERT_EQ(list.code, 0) << list.err;
  const auto local = list.out.find("Local\n");
  const auto available = list.out.find("Available for Download");
  ASSERT_NE(local, std::string::npos) << list.out;
  ASSERT_NE(available, std::string::npos) << list.out;
  const auto a = list.out.find("\na   ");  // Lemonade 11 lists user.a as "a"
  EXPECT_TRUE(a > local && a < available) << list.out;
  auto downloaded = lemonade_at({"list", "--downloaded", "A"});
  EXPECT_EQ(downloaded.code, 0);
  EXPECT_TRUE(has_text(downloaded.out, "\na   ")) << downloaded.out;
  EXPECT_FALSE(has_text(downloaded.out, "Available for Download")) << downloaded.out;

  auto load = lemonade_at({"load", "user.a", "--ctx-size", "2048"});
  ASSERT_EQ(load.code, 0) << load.out << load.err;
  EXPECT_TRUE(has_text(load.out, "Model loaded successfully!")) << load.out;
  EXPECT_EQ(loaded_field(health(port()), "user.a", "recipe_options")["ctx_size"], 2048);
  EXPECT_EQ(lemonade_at({"pin", "user.a"}).out, "Model pinned successfully!\n");
  EXPECT_TRUE(has_text(lemonade_at({"status"}).out, "(pinned)"));
  EXPECT_EQ(lemonade_at({"unpin", "user.a"}).out, "Model unpinned successfully!\n");
  auto unload = lemonade_at({"unload"});
  EXPECT_EQ(unload.code, 0) << unload.err;
  EXPECT_EQ(unload.out, "Unloading all models\nModel unloaded successfully!\n");
  auto again = lemonade_at({"unload", "user.a"});
  EXPECT_EQ(again.code, 1) << "not loaded";
  EXPECT_TRUE(again.err.starts_with("Error unloading model: ")) << again.err;
}

TEST_F(LemonadeCliTest, AliasesExportImportAndDelete) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_EQ(lemonade_at({"alias"}).out, "No model aliases registered.\n");
  auto add = lemonade_at({"alias", "add", "fast", "user.a"});
  ASSERT_EQ(add.code, 0) << add.err;
  EXPECT_TRUE(has_text(add.out, "Created alias 'fast' -> 'user.a'")) << add.out;
  EXPECT_TRUE(has_text(lemonade_at({"alias", "list"}).out, "fast -> user.a [llamacpp"));
  EXPECT_EQ(lemonade_at({"alias", "remove", "fast"}).code, 0);
  EXPECT_EQ(lemonade_at({"alias", "remove", "fast"}).code, 1) << "gone";

  auto exported = lemonade_at({"export", "user.a"});
  ASSERT_EQ(exported.code, 0) << exported.err;
  const json recipe = json::parse(exported.out);
  EXPECT_EQ(recipe["model_name"], "user.a");
  EXPECT_EQ(recipe["recipe"], "llamacpp");
  const std::string file = env_.root() + "/a.json";
  EXPECT_EQ(lemonade_at({"export", "user.a", "--output", file}).out,
            "Model info exported to '" + file + "'\n");
  EXPECT_EQ(json::parse(std::ifstream(file)), recipe);

  std::ofstream(env_.root() + "/bad.json") << R"({"model_name": "x"})";
  auto bad = lemonade_at({"import", env_.root() + "/bad.json"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_TRUE(has_text(bad.err, "needs model_name")) << bad.err;
  std::ofstream(env_.root() + "/reserved.json")
      << R"({"model_name": "builtin.x", "recipe": "llamacpp", "checkpoint": "o/r:Q4_0"})";
  EXPECT_EQ(lemonade_at({"import", env_.root() + "/reserved.json"}).code, 1);

  auto del = lemonade_at({"delete", "user.nope"});
  EXPECT_EQ(del.code, 1);
  EXPECT_TRUE(del.err.starts_with("Error deleting model: ")) << del.err;
}

TEST_F(LemonadeCliTest, ConfigBackendsUpdatesAndCache) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto config = lemonade_at({"config"});
  ASSERT_EQ(config.code, 0) << config.err;
  EXPECT_TRUE(config.out.starts_with("Server Configuration\n")) << config.out;
  EXPECT_TRUE(has_text(config.out, "[llamacpp]")) << config.out;
  auto set = lemonade_at({"config", "set", "max-loaded-models=2"});
  ASSERT_EQ(set.code, 0) << set.err;
  EXPECT_TRUE(has_text(set.out, "Configuration updated:")) << set.out;
  EXPECT_EQ(health(port())["max_models"]["llm"], 2);
  auto unknown = lemonade_at({"config", "set", "no_such_key=1"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_TRUE(has_text(unknown.err, "Run `lemonade config` to see valid keys.")) << unknown.err;

  auto backends = lemonade_at({"backends", "--all"});
  EXPECT_EQ(backends.code, 0) << backends.err;
  EXPECT_TRUE(has_text(backends.out, "Recipe")) << backends.out;
  EXPECT_TRUE(has_text(backends.out, "llamacpp")) << backends.out;
  auto spec = lemonade_at({"backends", "install", "llamacpp"});
  EXPECT_EQ(spec.code, 1);
  EXPECT_TRUE(has_text(spec.err, "recipe:backend")) << spec.err;

  auto updates = lemonade_at({"check-updates"});
  EXPECT_TRUE(updates.code == 0 || has_text(updates.err, "Error checking for updates"))
      << updates.out << updates.err;
  auto cleanup = lemonade_at({"cleanup-cache", "--dry-run"});
  EXPECT_EQ(cleanup.code, 0) << cleanup.err;
  EXPECT_TRUE(cleanup.out.starts_with("Previewing cache cleanup...\n")) << cleanup.out;
}

TEST_F(LemonadeCliTest, RunLogsChatAndBench) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string url = "http://127.0.0.1:" + std::to_string(port());
  auto run = lemonade_at({"run", "user.a"});  // no DISPLAY: the URL is printed
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(has_text(run.out, "Model loaded successfully!")) << run.out;
  EXPECT_TRUE(has_text(run.out, "Open the URL above manually: " + url + "/")) << run.out;
  auto logs = lemonade_at({"logs"});
  EXPECT_EQ(logs.code, 0);
  EXPECT_TRUE(has_text(logs.out, url + "/#log-panel")) << logs.out;

  auto chat = lemonade_at({"chat"}, {}, "Hello there\n");  // the loaded model
  ASSERT_EQ(chat.code, 0) << chat.err;
  EXPECT_FALSE(chat.out.empty());
  EXPECT_FALSE(has_text(chat.out, "Loading")) << "status lines stay on stderr";

  auto bench = lemonade_at({"bench", "user.a", "--prompt-tokens", "16", "32", "--runs", "2",
                            "--max-tokens", "4", "--json"});
  ASSERT_EQ(bench.code, 0) << bench.err;
  const json rows = json::parse(bench.out);
  ASSERT_EQ(rows.size(), 2u) << bench.out;
  EXPECT_EQ(rows[1]["prompt_tokens"], 32);
  EXPECT_EQ(rows[0]["runs"], 2);
  EXPECT_GT(rows[0]["tokens_per_second"].get<double>(), 0);
  EXPECT_TRUE(has_text(bench.err, "] 4/4")) << "the progress bar: " << bench.err;
}

}  // namespace
}  // namespace lemon::testing
