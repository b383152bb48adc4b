// config.json and SIGHUP against the real router (issue #30 §1): settings
// come from the file under the flags; SIGHUP reads it again, applies what
// applies live (the log level), lists the rest as pending a restart, and
// keeps the running configuration when the file is invalid; the router
// serves on throughout. GET /internal/config shows values and sources, the
// API key redacted; an invalid file at start is exit code 2 in one line.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_events.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using Json = nlohmann::json;

class ConfigReloadTest : public RouterTest {
 protected:
  // The next config_reloaded event that applied something, or (`failed`)
  // that failed. A file written is read by the watcher and again by a
  // SIGHUP, at once: the one that finds nothing new may come first.
  static std::optional<Json> next_reload(RouterEvents& events, bool failed = false) {
    for (;;) {
      auto e = events.next("config_reloaded", "");
      if (!e || (failed ? (*e)["ok"] == false : !(*e)["applied"].empty())) {
        return e;
      }
    }
  }
  Json config_view() {
    HttpReply r = http_get(port(), "/internal/config?sources=1");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
};

TEST_F(ConfigReloadTest, SighupAppliesLiveSettingsAndListsTheRestAsPending) {
  env_.add_llm("a");
  env_.add_llm("b");
  env_.write_config({{"log_level", "info"}, {"max_connections", 512}, {"max_replicas", 2}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-replicas", "3"}, env_.config_env()));
  Json view = config_view();
  EXPECT_EQ(view["settings"]["max_connections"]["value"], "512") << view.dump();
  EXPECT_EQ(view["settings"]["max_connections"]["source"], "config.json");
  EXPECT_EQ(view["settings"]["max_replicas"]["value"], "3") << "the flag wins";
  EXPECT_EQ(view["settings"]["max_replicas"]["source"], "flag");
  EXPECT_EQ(view["settings"]["host"]["source"], "default");
  EXPECT_EQ(view["reloads"], 0);
  ASSERT_EQ(load(port(), "user.a").status, 200);

  // Two LLMs at once from now on, and an idle model goes after 0.2 s.
  RouterEvents events(port());
  env_.write_config({{"log_level", "debug"},
                     {"max_connections", 256},
                     {"max_replicas", 4},
                     {"max_loaded_models", 2},
                     {"keep_alive", 0.2}});
  router().signal(SIGHUP);
  auto reloaded = next_reload(events);
  ASSERT_TRUE(reloaded.has_value());
  EXPECT_EQ((*reloaded)["ok"], true);
  EXPECT_EQ((*reloaded)["applied"], Json::array({"keep_alive", "log_level", "max_loaded_models"}))
      << reloaded->dump();
  EXPECT_EQ((*reloaded)["pending"], Json::array({"max_connections"}))
      << "max_replicas still comes from the flag: " << reloaded->dump();
  view = config_view();
  EXPECT_EQ(view["settings"]["log_level"]["value"], "debug");
  EXPECT_EQ(view["pending_restart"], (Json{{"max_connections", "256"}}));
  EXPECT_EQ(view["settings"]["max_connections"]["value"], "512") << "still the running one";
  EXPECT_EQ(health(port())["max_models"]["llm"], 2);
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  auto a_stopped = events.next("server_stopped", "user.a");
  ASSERT_TRUE(a_stopped.has_value()) << "the new keep-alive unloads the idle model";
  EXPECT_EQ((*a_stopped)["reason"], "keep-alive")
      << "b's load evicted nothing (two fit now): " << a_stopped->dump();
  EXPECT_EQ(http_get(port(), "/api/v1/health").status, 200) << "SIGHUP no longer stops it";
  EXPECT_EQ(router().count_log("draining"), 0);

  // An invalid file changes nothing, and says why.
  env_.write_config({{"log_level", "loud"}});
  router().signal(SIGHUP);
  auto refused = next_reload(events, /*failed=*/true);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ((*refused)["ok"], false);
  EXPECT_NE((*refused)["error"].get<std::string>().find("'log_level'"), std::string::npos)
      << refused->dump();
  view = config_view();
  EXPECT_EQ(view["settings"]["log_level"]["value"], "debug");
  EXPECT_NE(view["last_error"].get<std::string>().find("log_level"), std::string::npos);
  // Each file written was read by the watcher too; SIGHUP twice.
  EXPECT_GE(view["reloads"], 2);
  EXPECT_TRUE(router().wait_for_log("received SIGHUP", 2));
  EXPECT_EQ(http_get(port(), "/api/v1/health").status, 200);
}

TEST_F(ConfigReloadTest, InternalSetMergesChecksAndWritesConfigJson) {
  env_.write_config({{"max_connections", 512}, {"llamacpp", {{"backend", "cpu"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-replicas", "2"}, env_.config_env()));
  RouterEvents events(port());
  HttpReply r = http_post(port(), "/internal/set",
                          Json{{"keep_alive", 120},
                               {"llamacpp", {{"args", "--mlock"}}},
                               {"max_replicas", 3},
                               {"max_connections", 256}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json answer = r.json();
  EXPECT_EQ(answer["status"], "success");
  EXPECT_EQ(answer["applied"], Json::array({"keep_alive", "llamacpp.args"})) << answer.dump();
  EXPECT_EQ(answer["pending"], Json::array({"max_connections"})) << answer.dump();
  EXPECT_EQ(answer["overridden"], Json::array({"max_replicas"})) << "the flag still wins";
  // Written whole, with the keys it did not name kept.
  std::ifstream in(env_.config_dir() + "/config.json");
  const Json file = Json::parse(in);
  EXPECT_EQ(file, (Json{{"max_connections", 256},
                        {"llamacpp", {{"backend", "cpu"}, {"args", "--mlock"}}},
                        {"keep_alive", 120},
                        {"max_replicas", 3}}))
      << file.dump();
  EXPECT_EQ(config_view()["settings"]["keep_alive"]["value"], "120");

  // A value the setting refuses: 400 naming it, and the file as it was.
  HttpReply bad = http_post(port(), "/api/v1/internal/set", Json{{"port", 70000}});
  expect_error(bad, 400, "invalid_request_error", "", "an out-of-range port");
  EXPECT_NE(bad.json()["error"]["message"].get<std::string>().find("'port'"), std::string::npos)
      << bad.body;
  EXPECT_EQ(bad.json()["error"]["param"], "port") << "param names the key: " << bad.body;
  for (const Json& change : {Json{{"keep_alive", "banana"}}, Json{{"bogus_key", 1}},
                             Json{{"llamacpp", {{"bogus", 1}}}}}) {
    HttpReply refused = http_post(port(), "/internal/set", change);
    EXPECT_EQ(refused.status, 400) << refused.body;
    EXPECT_EQ(refused.json()["error"]["param"],
              change.begin().key() == "llamacpp" ? "llamacpp.bogus" : change.begin().key())
        << refused.body;
  }
  std::ifstream again(env_.config_dir() + "/config.json");
  EXPECT_EQ(Json::parse(again), file);
  expect_error(http_post(port(), "/internal/set", Json::object()), 400, "invalid_request_error", "",
               "an empty change");
  // null takes a key out of the file: back to its default.
  ASSERT_EQ(http_post(port(), "/internal/set", Json{{"keep_alive", nullptr}}).status, 200);
  EXPECT_EQ(config_view()["settings"]["keep_alive"]["source"], "default");
}

TEST_F(ConfigReloadTest, AModelWhoseLoadOptionsChangedReloadsOnceIdleAndNoOtherDoes) {
  env_.add_llm("a");
  env_.add_whisper("w");
  env_.write_config({{"ctx_size", 2048}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}, env_.config_env()));
  pid_t pid_a = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &pid_a));
  pid_t pid_w = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w", &pid_w));
  EXPECT_EQ(loaded_field(health(port()), "user.a", "recipe_options")["ctx_size"], 2048);
  ASSERT_EQ(
      http_post(port(), "/internal/pin", Json{{"model_name", "user.a"}, {"pinned", true}}).status,
      200);
  // A request in flight on user.a while its options change.
  std::optional<HttpReply> held;
  std::thread client([&] { held = chat(port(), "user.a", {{"lemon_fake", {{"gate", "start"}}}}); });
  const std::string backend = loaded_field(health(port()), "user.a", "backend_url");
  ASSERT_TRUE(fake_holds(backend, 1));

  RouterEvents events(port());
  env_.write_config({{"ctx_size", 8192}});
  auto reloaded = next_reload(events);
  ASSERT_TRUE(reloaded.has_value());
  EXPECT_EQ((*reloaded)["applied"], Json::array({"ctx_size"})) << reloaded->dump();
  EXPECT_EQ((*reloaded)["pending"], Json::array());
  // Found changed, and left alone while its request runs.
  ASSERT_TRUE(
      router().wait_for_log("'user.a': its load options changed; reloading it once it is idle"));
  EXPECT_EQ(loaded_pid(port(), "user.a"), pid_a);
  release_fake_gates(backend);
  client.join();
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->status, 200) << held->body << " (the request was never cut)";
  // Then reloaded with the new context, and the whisper model untouched.
  ASSERT_TRUE(eventually([&] {
    auto entry = loaded_entry(health(port()), "user.a");
    return entry && (*entry)["pid"] != pid_a && (*entry)["state"] == "ready";
  })) << health(port()).dump();
  EXPECT_EQ(loaded_field(health(port()), "user.a", "recipe_options")["ctx_size"], 8192);
  EXPECT_EQ(loaded_field(health(port()), "user.a", "pinned"), true) << "it keeps its pin";
  EXPECT_EQ(loaded_pid(port(), "user.w"), pid_w) << "its options did not change";
  EXPECT_EQ(router().count_log("'user.w': its load options changed"), 0);
  EXPECT_EQ(chat(port(), "user.a").status, 200);
}

TEST_F(ConfigReloadTest, TimeoutsApplyToTheRequestsThatStartAfterTheReload) {
  env_.add_llm("a");
  env_.write_config({{"log_level", "info"}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  const Json slow = {{"lemon_fake", {{"response_delay_ms", 3000}}}};
  ASSERT_EQ(load(port(), "user.a").status, 200);
  RouterEvents events(port());
  env_.write_config({{"log_level", "info"}, {"request_timeout", 0.3}});
  auto reloaded = next_reload(events);
  ASSERT_TRUE(reloaded.has_value());
  EXPECT_EQ((*reloaded)["applied"], Json::array({"request_timeout"})) << reloaded->dump();
  HttpReply r = chat(port(), "user.a", slow);
  expect_error(r, 504, "gateway_timeout", "", "a request after the reload");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("--request-timeout (300 ms)"),
            std::string::npos)
      << r.body;
  EXPECT_TRUE(config_view()["pending_restart"].empty());
}

TEST_F(ConfigReloadTest, TheMemoryBudgetChangesSizeLiveButNeedsARestartToTurnOff) {
  env_.write_config({{"memory_budget", "1G"}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  auto ram_budget = [&] {
    const Json h = health(port());
    for (const auto& d : h["devices"]) {
      if (d["device"] == "ram") {
        return d["budget"];
      }
    }
    return Json();
  };
  ASSERT_TRUE(eventually([&] { return ram_budget() == Json(1LL << 30); })) << health(port()).dump();
  RouterEvents events(port());
  env_.write_config({{"memory_budget", "2G"}});
  auto reloaded = next_reload(events);
  ASSERT_TRUE(reloaded.has_value());
  EXPECT_EQ((*reloaded)["applied"], Json::array({"memory_budget"})) << reloaded->dump();
  EXPECT_EQ(ram_budget(), Json(2LL << 30));
  // Off, with another change that the router takes at once: the budget in
  // force stays as it was.
  env_.write_config({{"memory_budget", "off"}, {"keep_alive", 120}});
  reloaded = next_reload(events);
  ASSERT_TRUE(reloaded.has_value());
  EXPECT_EQ((*reloaded)["applied"], Json::array({"keep_alive"})) << reloaded->dump();
  EXPECT_EQ((*reloaded)["pending"], Json::array({"memory_budget"})) << reloaded->dump();
  EXPECT_EQ(ram_budget(), Json(2LL << 30)) << "the budget in force stays until a restart";
  EXPECT_EQ(config_view()["pending_restart"]["memory_budget"], "off");
}

TEST_F(ConfigReloadTest, AChangedConfigJsonIsReadWithoutASignal) {
  env_.write_config({{"log_level", "info"}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  RouterEvents events(port());
  env_.write_config({{"log_level", "debug"}});
  auto reloaded = next_reload(events);
  ASSERT_TRUE(reloaded.has_value()) << "inotify saw the new file";
  EXPECT_EQ((*reloaded)["applied"], Json::array({"log_level"})) << reloaded->dump();
  EXPECT_EQ(config_view()["settings"]["log_level"]["value"], "debug");
}

TEST_F(ConfigReloadTest, AllowedOriginsChangeWithoutARestart) {
  env_.write_config({{"cors_origins", "http://a.example"}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  const std::string base = "http://127.0.0.1:" + std::to_string(port());
  auto from = [&](const std::string& origin) {
    return url_request(base, "GET", "/api/v1/models", "", {{"Origin", origin}});
  };
  EXPECT_EQ(from("http://a.example").header("Access-Control-Allow-Origin"), "http://a.example");
  EXPECT_EQ(from("http://b.example").status, 403);
  HttpReply set = http_post(port(), "/internal/set", Json{{"cors_origins", "http://b.example"}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json()["applied"], (Json{"cors_origins"})) << set.body;
  HttpReply b = from("http://b.example");
  EXPECT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(b.header("Access-Control-Allow-Origin"), "http://b.example");
  EXPECT_EQ(from("http://a.example").status, 403) << "the old origin is no longer allowed";
}

TEST_F(ConfigReloadTest, TheApiKeyIsNeverShown) {
  env_.write_config({{"api_key", "sekret-from-file"}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  EXPECT_EQ(http_get(port(), "/internal/config").status, 401) << "the key guards it";
  HttpReply r =
      url_request("http://127.0.0.1:" + std::to_string(port()), "GET", "/internal/config?sources=1",
                  "", {{"Authorization", "Bearer sekret-from-file"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("sekret"), std::string::npos) << r.body;
  EXPECT_EQ(r.json()["settings"]["api_key"]["value"], "(set)");
  HttpReply raw =
      url_request("http://127.0.0.1:" + std::to_string(port()), "GET", "/internal/config", "",
                  {{"Authorization", "Bearer sekret-from-file"}});
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_EQ(raw.body.find("sekret"), std::string::npos) << raw.body;
  EXPECT_EQ(raw.json()["api_key"], "(set)") << "Lemonade 11's raw shape, redacted too";
}

TEST_F(ConfigReloadTest, AnInvalidFileAtStartIsExitCodeTwoInOneLine) {
  env_.write_config({{"max_loaded_models", "many"}, {"prot", 1}});
  RouterProcess& r = launch_router({"--port", "0"}, env_.config_env());
  auto exit = r.wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 2);
  const auto lines = r.log_lines();
  ASSERT_EQ(lines.size(), 1u) << r.log_text();
  EXPECT_NE(lines[0].find("config.json"), std::string::npos) << lines[0];
}

// A config.json the user left broken is kept, and a change is refused with
// 409 naming the file and where the JSON breaks, not 500.
TEST_F(ConfigReloadTest, ABrokenConfigJsonRefusesAChangeWithAConflictNamingWhere) {
  env_.write_config({{"log_level", "info"}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  const std::string path = env_.config_dir() + "/config.json";
  const std::string broken = "{\n  \"log_level\": \"debug\",\n  \"keep_alive\": \n}\n";
  {
    std::ofstream out(path);
    out << broken;
  }
  HttpReply r = http_post(port(), "/internal/set", Json{{"log_level", "debug"}});
  expect_error(r, 409, "config_file_invalid", "", "a config.json that is not JSON");
  const std::string message = r.json()["error"]["message"].get<std::string>();
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("line 4, column 1"), std::string::npos) << message;
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), broken) << "never overwritten";

  {
    std::ofstream out(path);
    out << "[1, 2]\n";
  }
  HttpReply array = http_post(port(), "/internal/set", Json{{"log_level", "debug"}});
  expect_error(array, 409, "config_file_invalid", "", "a config.json that is not an object");
  EXPECT_NE(array.body.find("not a JSON object"), std::string::npos) << array.body;
  EXPECT_EQ(config_view()["settings"]["log_level"]["value"], "info") << "nothing applied";
}

// Writes config.json into `dir` as a Kubernetes ConfigMap volume holds it:
// the file in a hidden versioned folder, "..data" linking to that folder,
// and config.json linking through "..data". A second call swaps "..data" as
// the kubelet does: a new link renamed over the old one, then the old folder
// removed.
void write_configmap(const std::string& dir, const Json& config, const std::string& version) {
  namespace fs = std::filesystem;
  const fs::path versioned = fs::path(dir) / ("..2026_11_28_" + version);
  fs::create_directories(versioned);
  std::ofstream(versioned / "config.json") << config.dump(2) << "\n";
  std::string old_target;
  if (fs::is_symlink(fs::path(dir) / "..data")) {
    old_target = fs::read_symlink(fs::path(dir) / "..data").string();
  }
  fs::create_symlink(versioned.filename(), fs::path(dir) / "..data_tmp");
  fs::rename(fs::path(dir) / "..data_tmp", fs::path(dir) / "..data");
  if (!fs::is_symlink(fs::path(dir) / "config.json")) {
    fs::create_symlink("..data/config.json", fs::path(dir) / "config.json");
  }
  if (!old_target.empty()) {
    fs::remove_all(fs::path(dir) / old_target);
  }
}

// A config folder the router cannot write (a ConfigMap mount): a change is
// applied to this run and the answer says it was not saved; a new version
// of the ConfigMap is seen through its "..data" swap, and then the file
// wins over the change that was never saved.
TEST_F(ConfigReloadTest, AReadOnlyConfigMapFolderIsReloadedLiveAndTakesChangesForThisRunOnly) {
  if (const std::string why = can_mount_read_only(); !why.empty()) {
    GTEST_SKIP() << "no read-only mount here: " << why;
  }
  write_configmap(env_.config_dir(), {{"log_level", "info"}}, "1");
  read_only_dirs_ = {env_.config_dir()};
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  EXPECT_EQ(config_view()["settings"]["log_level"]["source"], "config.json");

  HttpReply r = http_post(port(), "/internal/set", Json{{"keep_alive", 120}});
  expect_error(r, 409, "config_not_saved", "", "a read-only config folder");
  EXPECT_NE(r.body.find("applied to this run only"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("Read-only file system"), std::string::npos) << r.body;
  EXPECT_EQ(config_view()["settings"]["keep_alive"]["value"], "120") << "applied all the same";
  std::ifstream in(env_.config_dir() + "/config.json");
  EXPECT_EQ(Json::parse(in), (Json{{"log_level", "info"}})) << "the ConfigMap's file as it was";

  RouterEvents events(port());
  write_configmap(env_.config_dir(), {{"log_level", "debug"}, {"max_loaded_models", 3}}, "2");
  auto reloaded = next_reload(events);
  ASSERT_TRUE(reloaded.has_value()) << "the watcher saw the ..data swap";
  EXPECT_EQ((*reloaded)["ok"], true) << reloaded->dump();
  const Json view = config_view();
  EXPECT_EQ(view["settings"]["log_level"]["value"], "debug") << view.dump();
  EXPECT_EQ(view["settings"]["max_loaded_models"]["value"], "3") << view.dump();
  EXPECT_EQ(view["settings"]["keep_alive"]["source"], "default")
      << "the new file wins over the change that was never saved: " << view.dump();
  EXPECT_EQ(health(port())["max_models"]["llm"], 3);
}

}  // namespace
}  // namespace lemon::testing
