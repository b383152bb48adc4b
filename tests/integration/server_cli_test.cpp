// lemonade-server, the CLI (issue #9), end to end: the real CLI binary runs
// the real router with fake backends and a fake hub. Every subcommand's
// output and exit code; the serve record and lock (stop right after serve,
// one serve at a time); temporary servers that leave nothing behind; pull
// success, failure and progress on a pipe and on a terminal; run piped and
// interactive (through a pseudo-terminal).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>

#include "support/cli_process.h"
#include "support/fake_hub.h"
#include "support/http_client.h"
#include "support/test_env.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kCliRepo = "org/tiny-GGUF";

int port_in(const std::string& text) {
  std::smatch m;
  static const std::regex kPort("started on port ([0-9]+)");
  return std::regex_search(text, m, kPort) ? std::stoi(m[1]) : 0;
}

std::string cli_file_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

class ServerCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.add_llm("a");
    fs::create_directories(runtime_dir());
  }

  void TearDown() override {
    if (serve_) {
      run_cli({"stop"}, cli_env());
      serve_->wait_exit();
      serve_.reset();
    }
    // A CLI killed at the end of a test takes its router with it (SIGTERM
    // through PR_SET_PDEATHSIG, then a graceful exit).
    EXPECT_TRUE(wait_routers_gone(env_.cache_dir()).empty())
        << "a router outlived the CLI that started it";
  }

  std::string runtime_dir() const { return env_.root() + "/run"; }

  // The router's environment plus the CLI's: its own runtime folder, and a
  // closed default port so no other server on this machine is found.
  std::map<std::string, std::string> cli_env(
      const std::map<std::string, std::string>& extra = {}) const {
    auto env = env_.router_env();
    env["LEMONADE_RUNTIME_DIR"] = runtime_dir();
    env["LEMONADE_PORT"] = "9";
    env["LEMONADE_LLAMACPP"] = "cpu";
    for (auto& [k, v] : extra) {
      env[k] = v;
    }
    return env;
  }

  // `serve --port 0 args...` in the background; returns its port.
  int start_serve(const std::vector<std::string>& args = {},
                  const std::map<std::string, std::string>& extra_env = {}) {
    std::vector<std::string> argv = {"serve", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    serve_ = std::make_unique<CliProcess>(argv, cli_env(extra_env));
    if (!serve_->wait_for("Connect your apps")) {
      ADD_FAILURE() << "serve did not start: " << serve_->out() << serve_->err();
      return 0;
    }
    return port_in(serve_->out());
  }

  CliResult cli(const std::vector<std::string>& args, const std::string& input = "",
                const std::map<std::string, std::string>& extra_env = {}) const {
    return run_cli(args, cli_env(extra_env), input);
  }

  TestEnv env_;
  std::unique_ptr<CliProcess> serve_;
};

// The last line on stderr starts with "Error", and no other does (status
// lines of `run` come before it).
void expect_error_last(const CliResult& r) {
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto last = r.err.rfind('\n', r.err.size() >= 2 ? r.err.size() - 2 : 0);
  std::string tail = last == std::string::npos ? r.err : r.err.substr(last + 1);
  EXPECT_TRUE(tail.starts_with("Error")) << r.err;
  EXPECT_EQ(r.err.find("Error"), r.err.size() - tail.size()) << r.err;
}

// One line on stderr, starting "Error".
void expect_one_error_line(const CliResult& r) {
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(r.err.starts_with("Error")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(ServerCliTest, VersionHelpAndUsageErrors) {
  auto version = cli({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_NE(version.out.find("lemonade-server version"), std::string::npos) << version.out;
  auto help = cli({});
  EXPECT_EQ(help.code, 0);
  for (const char* sub : {"serve", "run", "list", "pull", "delete", "status", "stop", "recipes",
                          "ps", "load", "unload", "logs", "pin", "unpin"}) {
    EXPECT_NE(help.out.find(sub), std::string::npos) << sub;
  }
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"pull"}, {"frobnicate"}, {"serve", "--port", "x"}, {"pull", "m", "--recipe", "nope"}}) {
    auto r = cli(bad);
    EXPECT_EQ(r.code, 2) << bad[0] << ": " << r.err;
    EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
  }
}

TEST_F(ServerCliTest, StatusWhenNothingRuns) {
  auto r = cli({"status"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "Server is not running\n");
  auto j = cli({"status", "--json"});
  EXPECT_EQ(j.code, 1);
  EXPECT_EQ(json::parse(j.out)["running"], false);
  auto stop = cli({"stop"});
  EXPECT_EQ(stop.code, 0);
  EXPECT_EQ(stop.out, "Lemonade Server is not running\n");
}

TEST_F(ServerCliTest, ServeStatusStop) {
  int port = start_serve();
  ASSERT_GT(port, 0);
  auto record = cli_file_text(runtime_dir() + "/lemonade-router.pid");
  EXPECT_TRUE(record.ends_with("\n" + std::to_string(port) + "\n")) << record;

  auto status = cli({"status"});
  EXPECT_EQ(status.code, 0);
  EXPECT_EQ(status.out, "Server is running on port " + std::to_string(port) + "\n");
  auto j = json::parse(cli({"status", "--json"}).out);
  EXPECT_EQ(j["running"], true);
  EXPECT_EQ(j["port"], port);
  EXPECT_EQ(std::to_string(j["pid"].get<int>()) + "\n" + std::to_string(port) + "\n", record);

  auto stop = cli({"stop"});
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_NE(stop.out.find("Stopping server on port " + std::to_string(port)), std::string::npos);
  EXPECT_NE(stop.out.find("Lemonade Server stopped successfully."), std::string::npos);
  EXPECT_EQ(serve_->wait_exit(), 0);
  EXPECT_FALSE(fs::exists(runtime_dir() + "/lemonade-router.pid"));
  EXPECT_EQ(cli({"status"}).code, 1);
  serve_.reset();
}

TEST_F(ServerCliTest, StopRightAfterServeAlwaysFindsTheServer) {
  for (int round = 0; round < 5; ++round) {
    CliProcess serve({"serve", "--port", "0"}, cli_env());
    ASSERT_TRUE(serve.wait_for("started on port")) << serve.out() << serve.err();
    auto stop = cli({"stop"});
    EXPECT_EQ(stop.code, 0) << stop.err;
    EXPECT_NE(stop.out.find("stopped successfully"), std::string::npos)
        << "round " << round << ": " << stop.out;
    EXPECT_EQ(serve.wait_exit(), 0) << "round " << round;
  }
}

TEST_F(ServerCliTest, OneServeAtATime) {
  ASSERT_GT(start_serve(), 0);
  auto second = cli({"serve", "--port", "0"});
  EXPECT_EQ(second.code, 1);
  EXPECT_NE(second.err.find("Another instance of lemonade-server serve is already running"),
            std::string::npos)
      << second.err;
}

TEST_F(ServerCliTest, SigtermToServeStopsTheRouterGracefully) {
  ASSERT_GT(start_serve(), 0);
  serve_->signal(SIGTERM);
  EXPECT_EQ(serve_->wait_exit(), 0);
  EXPECT_NE(serve_->out().find("received signal 15; draining"), std::string::npos) << serve_->out();
  EXPECT_FALSE(fs::exists(runtime_dir() + "/lemonade-router.pid"));
  serve_.reset();
}

TEST_F(ServerCliTest, ListWithoutAServerUsesATemporaryOne) {
  auto r = cli({"list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("Model Name")) << r.out;
  EXPECT_NE(r.out.find("Downloaded"), std::string::npos);
  // Listed as Lemonade 11 lists it: the bare name of a user model.
  std::regex row("\\na +Yes +llamacpp +llm +[^ ]+ +No");
  EXPECT_TRUE(std::regex_search(r.out, row)) << r.out;
  EXPECT_NE(r.out.find("Qwen3-0.6B-GGUF"), std::string::npos);
  EXPECT_FALSE(fs::exists(runtime_dir() + "/lemonade-router.pid"))
      << "a temporary server is not recorded";
  EXPECT_TRUE(routers_with_cache(env_.cache_dir()).empty());

  auto j = cli({"list", "--json"});
  ASSERT_EQ(j.code, 0);
  auto models = json::parse(j.out);
  auto a =
      std::find_if(models.begin(), models.end(), [](const json& m) { return m["name"] == "a"; });
  ASSERT_NE(a, models.end());
  EXPECT_EQ((*a)["downloaded"], true);
  EXPECT_EQ((*a)["loaded"], false);
  EXPECT_EQ((*a)["recipe"], "llamacpp");
}

TEST_F(ServerCliTest, LoadPsListUnloadAgainstARunningServer) {
  ASSERT_GT(start_serve(), 0);
  auto load = cli({"load", "user.a", "--ctx-size", "2048"});
  ASSERT_EQ(load.code, 0) << load.err;
  EXPECT_NE(load.out.find("Model loaded successfully: user.a"), std::string::npos);

  auto ps = json::parse(cli({"ps", "--json"}).out);
  ASSERT_EQ(ps.size(), 1u) << ps.dump();
  EXPECT_EQ(ps[0]["model"], "user.a");
  EXPECT_EQ(ps[0]["type"], "llm");
  EXPECT_GT(ps[0]["pid"].get<int>(), 0);
  EXPECT_EQ(ps[0]["in_flight"], 0);
  auto table = cli({"ps"});
  EXPECT_TRUE(table.out.starts_with("MODEL")) << table.out;
  EXPECT_NE(table.out.find("user.a"), std::string::npos);

  std::regex loaded_row("\\na +Yes +llamacpp +llm +[^ ]+ +Yes");
  EXPECT_TRUE(std::regex_search(cli({"list"}).out, loaded_row));

  auto unload = cli({"unload"});
  EXPECT_EQ(unload.code, 0);
  EXPECT_EQ(unload.out, "All models unloaded\n");
  EXPECT_TRUE(json::parse(cli({"ps", "--json"}).out).empty());

  auto unknown = cli({"load", "user.nope"});
  expect_one_error_line(unknown);
}

TEST_F(ServerCliTest, LoadPinnedPinAndUnpin) {
  ASSERT_GT(start_serve(), 0);
  ASSERT_EQ(cli({"load", "user.a", "--pinned", "--priority", "7"}).code, 0);
  auto ps = json::parse(cli({"ps", "--json"}).out);
  ASSERT_EQ(ps.size(), 1u) << ps.dump();
  EXPECT_EQ(ps[0]["pinned"], true);
  EXPECT_EQ(ps[0]["priority"], 7);
  expect_one_error_line(cli({"load", "user.a", "--priority", "5000"}));
  auto unpin = cli({"unpin", "user.a"});
  ASSERT_EQ(unpin.code, 0) << unpin.err;
  EXPECT_EQ(unpin.out, "Model unpinned: user.a\n");
  EXPECT_EQ(json::parse(cli({"ps", "--json"}).out)[0]["pinned"], false);
  auto pin = cli({"pin", "user.a"});
  ASSERT_EQ(pin.code, 0) << pin.err;
  EXPECT_EQ(pin.out, "Model pinned: user.a\n");
  EXPECT_EQ(json::parse(cli({"ps", "--json"}).out)[0]["pinned"], true);
  ASSERT_EQ(cli({"unload"}).code, 0);
  auto not_loaded = cli({"pin", "user.a"});
  expect_one_error_line(not_loaded);
  EXPECT_NE(not_loaded.err.find("not loaded"), std::string::npos) << not_loaded.err;
}

// config path / set / get (issue #30 §1): without a server `set` checks
// and writes config.json itself; with one it goes through POST
// /internal/set, and `get` shows what the server runs with.
TEST_F(ServerCliTest, ConfigPathSetAndGet) {
  const std::map<std::string, std::string> conf = {{"LEMONADE_CONFIG_DIR", env_.root() + "/conf"}};
  const std::string file = env_.root() + "/conf/config.json";
  auto path = cli({"config", "path"}, "", conf);
  ASSERT_EQ(path.code, 0) << path.err;
  EXPECT_EQ(path.out, file + "\n");
  ASSERT_EQ(cli({"config", "set", "keep_alive", "300"}, "", conf).code, 0);
  ASSERT_EQ(cli({"config", "set", "llamacpp.args", "--", "--mlock"}, "", conf).code, 0);
  EXPECT_EQ(json::parse(cli_file_text(file)),
            (json{{"keep_alive", 300}, {"llamacpp", {{"args", "--mlock"}}}}));
  auto bad = cli({"config", "set", "port", "eighty"}, "", conf);
  expect_one_error_line(bad);
  EXPECT_NE(bad.err.find("'port'"), std::string::npos) << bad.err;
  auto no_server = cli({"config", "get"}, "", conf);
  expect_one_error_line(no_server);

  ASSERT_GT(start_serve({}, conf), 0);
  auto kept = cli({"config", "get", "keep_alive"}, "", conf);
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_EQ(kept.out, "300\n");
  auto live = cli({"config", "set", "keep_alive", "120"}, "", conf);
  ASSERT_EQ(live.code, 0) << live.err;
  EXPECT_NE(live.out.find("in force now"), std::string::npos) << live.out;
  EXPECT_EQ(cli({"config", "get", "keep_alive"}, "", conf).out, "120\n");
  auto all = cli({"config", "get", "--json"}, "", conf);
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(json::parse(all.out)["settings"]["keep_alive"]["source"], "config.json");
  expect_one_error_line(cli({"config", "set", "port", "70000"}, "", conf));
}

// `config add-key` prints a key once and keeps only its SHA-256; a running
// router, which watches config.json, takes it at once.
TEST_F(ServerCliTest, AddKeyPrintsAKeyTheRunningRouterTakes) {
  const std::map<std::string, std::string> conf = {{"LEMONADE_CONFIG_DIR", env_.root() + "/conf"}};
  const std::string file = env_.root() + "/conf/config.json";
  auto first = cli({"config", "add-key", "laptop", "--scopes", "inference,read"}, "", conf);
  ASSERT_EQ(first.code, 0) << first.err;
  const std::string key = first.out.substr(0, first.out.find('\n'));
  EXPECT_EQ(key.rfind("lem-", 0), 0u) << first.out;
  EXPECT_EQ(key.size(), 52u);
  const std::string text = cli_file_text(file);
  EXPECT_EQ(text.find(key), std::string::npos) << "the key itself is stored";
  const json entry = json::parse(text)["auth"]["keys"][0];
  EXPECT_EQ(entry["name"], "laptop");
  EXPECT_EQ(entry["scopes"], (json{"inference", "read"}));
  expect_one_error_line(cli({"config", "add-key", "laptop", "--scopes", "read"}, "", conf));
  expect_one_error_line(cli({"config", "add-key", "x", "--scopes", "root"}, "", conf));

  const int port = start_serve({}, conf);
  ASSERT_GT(port, 0);
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(url_request(base, "GET", "/v1/models", "", {{"Authorization", "Bearer " + key}}).status,
            200);
  EXPECT_EQ(url_get(base, "/v1/models").status, 401);
  auto second = cli(
      {"config", "add-key", "ops", "--scopes", "admin", "--requests-per-minute", "30"}, "", conf);
  ASSERT_EQ(second.code, 0) << second.err;
  const std::string ops = second.out.substr(0, second.out.find('\n'));
  EXPECT_TRUE(eventually([&] {
    return url_request(base, "GET", "/internal/routes", "", {{"Authorization", "Bearer " + ops}})
               .status == 200;
  })) << "the running router did not take the new key";
}

TEST_F(ServerCliTest, CommandsThatNeedARunningServerSaySo) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"ps"}, {"load", "user.a"}, {"unload"}}) {
    auto r = cli(args);
    expect_one_error_line(r);
    EXPECT_NE(r.err.find("not running"), std::string::npos) << r.err;
  }
}

class ServerCliPullTest : public ServerCliTest {
 protected:
  void SetUp() override {
    ServerCliTest::SetUp();
    hub_.add_random_file(kCliRepo, "tiny-Q4_0.gguf", 3 << 20, 1);
    hub_.add_file(kCliRepo, "README.md", "# tiny\n");
    ASSERT_TRUE(hub_.start());
  }
  std::map<std::string, std::string> hub_env() const { return {{"HF_ENDPOINT", hub_.endpoint()}}; }

  FakeHub hub_;
};

TEST_F(ServerCliPullTest, PullRegistersAndDownloadsWithPlainProgressOnAPipe) {
  auto r = cli({"pull", "user.tiny", "--checkpoint", std::string(kCliRepo) + ":Q4_0", "--recipe",
                "llamacpp", "--reasoning"},
               "", hub_env());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("Pulling model: user.tiny\n")) << r.out;
  EXPECT_NE(r.out.find("[1/1] tiny-Q4_0.gguf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "no terminal escapes on a pipe";
  EXPECT_TRUE(r.out.ends_with("Model pulled successfully: user.tiny\n")) << r.out;
  auto users = json::parse(cli_file_text(fs::path(env_.cache_dir()) / "user_models.json"));
  EXPECT_EQ(users["tiny"]["checkpoint"], std::string(kCliRepo) + ":Q4_0");
  EXPECT_EQ(users["tiny"]["labels"], (json{"custom", "reasoning"}));

  auto del = cli({"delete", "user.tiny"});
  EXPECT_EQ(del.code, 0) << del.err;
  EXPECT_EQ(del.out, "Deleting model: user.tiny\nModel deleted successfully: user.tiny\n");
  EXPECT_EQ(cli({"delete", "user.tiny"}).code, 1);
}

TEST_F(ServerCliPullTest, PullOnATerminalRedrawsItsBars) {
  auto env = cli_env(hub_env());
  CliProcess p({"pull", "user.tiny", "--checkpoint", std::string(kCliRepo) + ":Q4_0", "--recipe",
                "llamacpp"},
               env, /*terminal=*/true);
  ASSERT_EQ(p.wait_exit(), 0) << p.out();
  EXPECT_TRUE(p.wait_for("Model pulled successfully"));
  EXPECT_NE(p.out().find("\x1b[2K[1/1] tiny-Q4_0.gguf"), std::string::npos) << p.out();
}

TEST_F(ServerCliPullTest, PullFailuresExitOneWithOneLine) {
  auto missing =
      cli({"pull", "user.gone", "--checkpoint", "org/absent-GGUF:Q4_0", "--recipe", "llamacpp"}, "",
          hub_env());
  expect_one_error_line(missing);
  EXPECT_EQ(cli({"pull", "Not-A-Model"}, "", hub_env()).code, 1);

  // The hub corrupts the file every time: the stream ends with an `error`
  // event (checksum mismatch), which is a failure.
  hub_.set_knobs({{{"path", std::string(kCliRepo) + "/tiny-Q4_0.gguf"}, {"corrupt", true}}});
  auto cut = cli({"pull", "user.tiny", "--checkpoint", std::string(kCliRepo) + ":Q4_0", "--recipe",
                  "llamacpp"},
                 "", hub_env());
  expect_one_error_line(cut);
  EXPECT_NE(cut.err.find("Error pulling model:"), std::string::npos) << cut.err;
  EXPECT_EQ(cut.out.find("pulled successfully"), std::string::npos);
}

TEST_F(ServerCliPullTest, CtrlCCancelsAPullAndTheNextOneResumes) {
  const std::string file = std::string(kCliRepo) + "/tiny-Q4_0.gguf";
  constexpr int kCut = 1 << 20;
  hub_.set_knobs({{{"path", file}, {"stall_after_bytes", kCut}}});
  CliProcess p({"pull", "user.tiny", "--checkpoint", std::string(kCliRepo) + ":Q4_0", "--recipe",
                "llamacpp"},
               cli_env(hub_env()));
  ASSERT_TRUE(hub_.wait_stalled(file));
  // The hub has sent kCut bytes; the router has them on disk once its
  // .incomplete blob is that long (then a Ctrl-C cannot lose any of them).
  auto incomplete_bytes = [&] {
    std::uintmax_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(env_.hf_cache(), ec)) {
      if (e.path().extension() == ".incomplete") {
        n += fs::file_size(e.path(), ec);
      }
    }
    return n;
  };
  ASSERT_TRUE(eventually([&] { return incomplete_bytes() == kCut; })) << incomplete_bytes();
  p.signal(SIGINT);
  EXPECT_EQ(p.wait_exit(), 1);
  EXPECT_NE(p.err().find("cancelled"), std::string::npos) << p.err();
  EXPECT_TRUE(routers_with_cache(env_.cache_dir()).empty()) << "its temporary server stopped";

  hub_.set_knobs(json::array());
  hub_.clear_log();
  auto r = cli({"pull", "user.tiny"}, "", hub_env());
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<json> fetches;
  for (const auto& req : hub_.log()) {
    std::string path = req["path"].get<std::string>();
    if (path.starts_with("/_cdn/") && path.ends_with("/tiny-Q4_0.gguf")) {
      fetches.push_back(req);
    }
  }
  ASSERT_EQ(fetches.size(), 1u) << hub_.log().dump();
  EXPECT_EQ(fetches[0]["range"], "bytes=" + std::to_string(kCut) + "-") << "resumed, not restarted";
}

TEST_F(ServerCliPullTest, PullOfAJsonFile) {
  fs::path file = fs::path(env_.root()) / "model.json";
  std::ofstream(file) << json{
      {"id", "user.fromjson"},
      {"checkpoint", std::string(kCliRepo) + ":Q4_0"},
      {"recipe", "llamacpp"}}.dump();
  auto r = cli({"pull", file.string()}, "", hub_env());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Model pulled successfully: user.fromjson"), std::string::npos) << r.out;

  fs::path bad = fs::path(env_.root()) / "bad.json";
  std::ofstream(bad) << "{not json";
  auto b = cli({"pull", bad.string()}, "", hub_env());
  expect_one_error_line(b);
  EXPECT_NE(b.err.find("not a valid JSON file"), std::string::npos) << b.err;
}

TEST_F(ServerCliTest, PullOfALocalFolderImportsIt) {
  fs::path src = fs::path(env_.root()) / "my-model";
  fs::create_directories(src / "q");
  std::ofstream(src / "q" / "my-Q4_0.gguf") << "weights";
  std::ofstream(src / "mmproj-my.gguf") << "projector";
  auto r =
      cli({"pull", "user.Mine", "--checkpoint", src.string(), "--recipe", "llamacpp", "--vision"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Model imported successfully: user.Mine"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(fs::path(env_.hf_cache()) / "models--Mine" / "q" / "my-Q4_0.gguf"));
  auto users = json::parse(cli_file_text(fs::path(env_.cache_dir()) / "user_models.json"));
  EXPECT_EQ(users["Mine"]["source"], "local_upload");
  EXPECT_EQ(users["Mine"]["checkpoint"], "models--Mine/q/my-Q4_0.gguf");
  EXPECT_EQ(users["Mine"]["mmproj"], "../mmproj-my.gguf");
  std::regex row("\\nMine +Yes +llamacpp");
  EXPECT_TRUE(std::regex_search(cli({"list"}).out, row));

  auto relative = cli({"pull", "Mine2", "--checkpoint", src.string(), "--recipe", "llamacpp"});
  expect_one_error_line(relative);
  auto no_recipe = cli({"pull", "user.Mine3", "--checkpoint", src.string()});
  expect_one_error_line(no_recipe);
}

TEST_F(ServerCliTest, RecipesTableAndJson) {
  auto r = cli({"recipes"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("Recipe")) << r.out;
  EXPECT_NE(r.out.find("llamacpp"), std::string::npos);
  std::regex cpu_row("cpu +installed");  // LEMONADE_LLAMACPP_CPU_BIN points at the fake
  EXPECT_TRUE(std::regex_search(r.out, cpu_row)) << r.out;
  auto j = json::parse(cli({"recipes", "--json"}).out);
  EXPECT_EQ(j["llamacpp"]["backends"]["cpu"]["state"], "installed");
  auto bad = cli({"recipes", "--install", "llamacpp"});
  expect_one_error_line(bad);
}

TEST_F(ServerCliTest, LogsPrintsTheServersLog) {
  ASSERT_GT(start_serve(), 0);
  ASSERT_EQ(cli({"load", "user.a"}).code, 0);
  auto logs = cli({"logs"});
  EXPECT_EQ(logs.code, 0);
  EXPECT_NE(logs.out.find("listening on http://"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("loaded 'user.a'"), std::string::npos) << logs.out;

  CliProcess follow({"logs", "--follow"}, cli_env());
  ASSERT_TRUE(follow.wait_for("loaded 'user.a'"));
  auto before = follow.out().size();
  ASSERT_EQ(cli({"unload", "user.a"}).code, 0);
  EXPECT_TRUE(follow.wait_for("stopped 'user.a'", before)) << follow.out();
  follow.signal(SIGINT);
  EXPECT_EQ(follow.wait_exit(), 0);
}

TEST_F(ServerCliTest, RunPipedPrintsOneAnswerOnStdout) {
  auto r = cli({"run", "user.a", "--port", "0"}, "Why is the sky blue?\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("The quick brown fox")) << r.out;
  EXPECT_NE(r.err.find("Loading model user.a..."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Model loaded successfully!"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(runtime_dir() + "/lemonade-router.pid")) << "its server is stopped";

  auto unknown = cli({"run", "user.nope", "--port", "0"}, "hi\n");
  expect_error_last(unknown);
  auto empty = cli({"run", "user.a", "--port", "0"}, "");
  expect_one_error_line(empty);
}

TEST_F(ServerCliTest, RunUsesARunningServer) {
  int port = start_serve();
  ASSERT_GT(port, 0);
  auto r = cli({"run", "user.a"}, "hi\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("already running"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"status"}).code, 0) << "the server it did not start keeps running";
  EXPECT_EQ(json::parse(cli({"ps", "--json"}).out).size(), 1u);
}

TEST_F(ServerCliTest, RunInteractiveChatsClearsAndExits) {
  CliProcess p({"run", "user.a", "--port", "0"}, cli_env(), /*terminal=*/true);
  auto at = p.wait_for(">>> ");
  ASSERT_TRUE(at) << p.out();
  p.write("hello\n");
  at = p.wait_for("lazy", *at);
  ASSERT_TRUE(at) << p.out();
  at = p.wait_for(">>> ", *at);
  ASSERT_TRUE(at);
  p.write("/clear\n");
  at = p.wait_for("Cleared session context", *at);
  ASSERT_TRUE(at) << p.out();
  p.write("\"\"\"\n");
  at = p.wait_for("... ", *at);
  ASSERT_TRUE(at) << p.out();
  p.write("two\nlines\n\"\"\"\n");
  at = p.wait_for("lazy", *at);
  ASSERT_TRUE(at) << p.out();
  at = p.wait_for(">>> ", *at);
  ASSERT_TRUE(at);
  p.write("/bye\n");
  EXPECT_EQ(p.wait_exit(), 0) << p.out();
}

TEST_F(ServerCliTest, CtrlCStopsAReplyAndAtThePromptSaysHowToExit) {
  // Slow tokens: a reply takes 200 x 50 ms unless stopped.
  env_.write_sidecar(env_.models_dir() + "/a.gguf",
                     {{"stream_chunk_delay_ms", 50}, {"tokens", 200}});
  CliProcess p({"run", "user.a", "--port", "0"}, cli_env(), /*terminal=*/true);
  auto at = p.wait_for(">>> ");
  ASSERT_TRUE(at) << p.out();
  p.write("tell me a long story\n");
  at = p.wait_for("quick", *at);
  ASSERT_TRUE(at) << p.out();
  p.write("\x03");  // Ctrl-C
  at = p.wait_for(">>> ", *at);
  ASSERT_TRUE(at) << "the prompt comes back: " << p.out();
  p.write("\x03");
  at = p.wait_for("Use Ctrl + d or /bye to exit.", *at);
  ASSERT_TRUE(at) << p.out();
  p.write("\x04");  // Ctrl-D
  EXPECT_EQ(p.wait_exit(), 0) << p.out();
}

}  // namespace
}  // namespace lemon::testing
