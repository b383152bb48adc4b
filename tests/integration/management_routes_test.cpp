// The rest of Lemonade 9.4.1's management surface (issue #12 §1) and the
// probes: system-stats, params, save_options, readiness, the shutdown route,
// the dashboard's files, and every Lemonade route answering HEAD.
#include <sys/stat.h>

#include <csignal>
#include <fstream>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using ManagementRoutesTest = RouterTest;

TEST_F(ManagementRoutesTest, SystemStatsHasLemonadesShapeAndReadsNvidiaSmi) {
  // An nvidia-smi on PATH that answers as the real one does for two GPUs.
  const std::string bin = env_.root() + "/bin";
  ::mkdir(bin.c_str(), 0755);
  {
    std::ofstream script(bin + "/nvidia-smi");
    script << "#!/bin/sh\n"
              "[ \"$1\" = --query-gpu=utilization.gpu,memory.used ] || exit 2\n"
              "echo '37, 2048'\necho '5, 1024'\n";
  }
  ::chmod((bin + "/nvidia-smi").c_str(), 0755);
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"PATH", bin + ":/usr/bin:/bin"}}));
  auto r = http_get(port(), "/api/v1/system-stats");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  for (const char* key : {"cpu_percent", "memory_gb", "gpu_percent", "vram_gb", "npu_percent"}) {
    EXPECT_TRUE(j.contains(key)) << key << " missing: " << r.body;
  }
  EXPECT_GT(j["memory_gb"].get<double>(), 0.0);
  EXPECT_TRUE(j["cpu_percent"].is_number()) << r.body;
  EXPECT_GE(j["gpu_percent"].get<double>(), 37.0) << "the busiest GPU: " << r.body;
  EXPECT_GE(j["vram_gb"].get<double>(), 3.0) << "VRAM used over both GPUs: " << r.body;
}

TEST_F(ManagementRoutesTest, ParamsFillWhatARequestLeavesOut) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto bad = http_post(port(), "/api/v1/params", nlohmann::json{{"temprature", 0.5}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()["error"]["param"], "temprature");
  EXPECT_EQ(http_post(port(), "/api/v1/params", nlohmann::json{{"top_p", 2}}).status, 400);
  auto set = http_post(port(), "/api/v1/params",
                       nlohmann::json{{"temperature", 0.3}, {"top_k", 5}, {"stop", "END"}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json()["params"]["top_k"], 5);
  EXPECT_EQ(http_get(port(), "/api/v1/params").json()["params"]["temperature"], 0.3);

  ASSERT_EQ(chat(port(), "user.a", {{"temperature", 0.9}}).status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  auto sent = fake_state(url)["last_request"];
  EXPECT_EQ(sent["temperature"], 0.9) << "the request's own value wins";
  EXPECT_EQ(sent["top_k"], 5);
  EXPECT_EQ(sent["stop"], "END");

  ASSERT_EQ(http_post(port(), "/api/v1/params", nlohmann::json{{"top_k", nullptr}}).status, 200);
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  sent = fake_state(url)["last_request"];
  EXPECT_FALSE(sent.contains("top_k")) << "null removed the default: " << sent.dump();
  EXPECT_EQ(sent["temperature"], 0.3);
}

TEST_F(ManagementRoutesTest, SaveOptionsPersistsWhatTheLoadRanWith) {
  env_.add_llm("a");
  env_.write_recipe_options({{"user.other", {{"ctx_size", 1234}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r = load(port(), "user.a", {{"ctx_size", 8192}, {"save_options", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::ifstream in(env_.cache_dir() + "/recipe_options.json");
  auto saved = nlohmann::json::parse(in);
  EXPECT_EQ(saved["user.a"]["ctx_size"], 8192);
  EXPECT_EQ(saved["user.a"]["llamacpp_backend"], "cpu") << "the effective options: " << saved;
  EXPECT_EQ(saved["user.other"]["ctx_size"], 1234) << "other entries are kept";

  // An auto-load after an unload gets them back.
  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json::object()).status, 200);
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  EXPECT_EQ(loaded_field(health(port()), "user.a", "recipe_options")["ctx_size"], 8192);
  EXPECT_EQ(load(port(), "user.a", {{"save_options", "yes"}}).status, 400);
}

TEST_F(ManagementRoutesTest, EveryLemonadeRouteAnswersHead) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  // Lemonade 9.4.1's routes (src/cpp/server/server.cpp setup_routes).
  const char* routes[] = {"health",        "models",
                          "models/user.a", "chat/completions",
                          "completions",   "embeddings",
                          "reranking",     "audio/transcriptions",
                          "audio/speech",  "images/generations",
                          "images/edits",  "images/variations",
                          "responses",     "pull",
                          "load",          "unload",
                          "delete",        "params",
                          "install",       "uninstall",
                          "stats",         "system-info",
                          "system-stats",  "log-level",
                          "logs/stream"};
  for (const char* prefix : {"/api/v0/", "/api/v1/"}) {
    for (const char* route : routes) {
      const std::string path = std::string(prefix) + route;
      if (path.find("logs/stream") != std::string::npos) {
        RawClient c(port());  // a HEAD of a stream: the head only
        c.send("HEAD " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port()) +
               "\r\nConnection: close\r\n\r\n");
        EXPECT_NE(c.read_response(true).status, 404) << path;
        continue;
      }
      EXPECT_NE(http_request(port(), "HEAD", path).status, 404) << path;
    }
  }
  EXPECT_EQ(http_request(port(), "HEAD", "/api/v0/nonexistent").status, 404);
  EXPECT_EQ(http_post(port(), "/api/v1/test", nlohmann::json::object()).json()["test"], "ok");
}

TEST_F(ManagementRoutesTest, ReadyUntilTheDrainStarts) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_EQ(http_get(port(), "/ready").json()["status"], "ready");
  EXPECT_EQ(http_get(port(), "/api/v1/ready").status, 200);
  // A stream keeps the drain going while a probe asks on an open connection.
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 100000, 50).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());
  RawClient probe(port());
  const std::string ready =
      "GET /ready HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port()) + "\r\n\r\n";
  probe.send(ready);
  ASSERT_EQ(probe.read_response().status, 200);
  // Half of the next probe before the signal, so the connection is not idle
  // (the drain closes idle ones), the rest after it.
  probe.send(ready.substr(0, 8));
  router().signal(SIGTERM);
  ASSERT_TRUE(router().wait_for_log("received signal 15; draining"));
  probe.send(ready.substr(8));
  auto r = probe.read_response();
  EXPECT_EQ(r.status, 503) << r.head;
  EXPECT_NE(r.body.find("shutting_down"), std::string::npos) << r.body;
  router().signal(SIGTERM);
  ASSERT_TRUE(router().wait_exit().has_value());
}

TEST_F(ManagementRoutesTest, InternalShutdownDrainsLikeSigterm) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", "k"}));
  EXPECT_EQ(http_post(port(), "/internal/shutdown", nlohmann::json::object()).status, 401);
  RawClient c(port());
  c.send("POST /internal/shutdown HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port()) +
         "\r\nAuthorization: Bearer k\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  auto r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("shutting down"), std::string::npos);
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 0);
  EXPECT_EQ(router().count_log("received signal 15"), 1);
}

TEST_F(ManagementRoutesTest, TheDashboardIsServedWithoutTheKeyAndNothingElseIs) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", "k"}));
  auto page = http_get(port(), "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page.header("Content-Security-Policy").find("default-src 'self'"), std::string::npos);
  EXPECT_NE(page.body.find("<html"), std::string::npos);
  EXPECT_EQ(http_get(port(), "/web/index.html").status, 200);
  // Lemonade's own page addresses lead to the dashboard too.
  for (const char* path : {"/status", "/api/v1", "/api/v0", "/web-app", "/web-app/"}) {
    auto alias = http_get(port(), path);
    EXPECT_EQ(alias.status, 200) << path;
    EXPECT_EQ(alias.body, page.body) << path;
  }
  auto icon = http_get(port(), "/favicon.ico");
  EXPECT_EQ(icon.status, 200);
  EXPECT_EQ(icon.header("Content-Type"), "image/svg+xml");
  for (const char* path : {"/web/..%2Fserver_models.json", "/web/../server_models.json",
                           "/web/.hidden", "/web/nope.js", "/web/sub/dir.js"}) {
    EXPECT_EQ(http_get(port(), path).status, 404) << path;
  }
  EXPECT_EQ(http_get(port(), "/api/v1/health").status, 401) << "the data still needs the key";
}

}  // namespace
}  // namespace lemon::testing
