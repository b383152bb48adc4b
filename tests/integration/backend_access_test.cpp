// Backends are reachable only through the router (issue #24): every
// llama-server gets a secret of its own in LLAMA_API_KEY and the router sends
// it on every call, so a direct call (a web page scanning loopback ports, or
// another user of the machine) gets llama-server's 401 while the same call
// through the router succeeds; whisper-server, which has no key, serves only
// under a path made of its secret. The secret never shows: not in the
// router's log at trace level, /health, system-info, stats, metrics, or the
// backend's command line.
#include <gtest/gtest.h>

#include <string>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using nlohmann::json;
using BackendAccessTest = RouterTest;

const std::string kChat =
    R"({"model":"user.a","messages":[{"role":"user","content":"hi"}],"max_tokens":3})";

TEST_F(BackendAccessTest, ADirectCallIsRefusedWhileTheRouterGetsThrough) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");

  // As a web page would send it, straight to the backend's port.
  for (const char* path : {"/v1/chat/completions", "/chat/completions", "/completion"}) {
    HttpReply direct = url_request(url, "POST", path, kChat, {{"Origin", "http://evil.example"}});
    EXPECT_EQ(direct.status, 401) << path << ": " << direct.body;
    EXPECT_EQ(direct.json()["error"]["type"], "authentication_error") << direct.body;
  }
  for (const char* path : {"/slots", "/props", "/metrics"}) {
    EXPECT_EQ(url_get(url, path).status, 401) << path;
  }
  // A guessed key is no better than none.
  HttpReply guessed = url_request(url, "POST", "/v1/chat/completions", kChat,
                                  {{"Authorization", "Bearer lemonade"}});
  EXPECT_EQ(guessed.status, 401) << guessed.body;

  // The same request through the router: the router holds the key.
  HttpReply routed = http_post(port(), "/api/v1/chat/completions", kChat);
  EXPECT_EQ(routed.status, 200) << routed.body;
  // And the backend saw it: the request reached it only through the router.
  EXPECT_EQ(fake_state(url)["requests"], 1) << fake_state(url).dump();
}

TEST_F(BackendAccessTest, TheSecretIsNeverShownAndEachProcessGetsItsOwn) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--log-level", "trace"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  const int pid = loaded_pid(port(), "user.a");
  const std::string key = environment_value(pid, "LLAMA_API_KEY");
  ASSERT_EQ(key.size(), 64u) << "256 bits as hex, in the child's environment";
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;

  // Every upstream call the router makes carries it: a chat, a stream, and
  // the telemetry that reads /slots and /metrics.
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  ASSERT_EQ(
      http_post(port(), "/api/v1/chat/completions", stream_body("user.a", 3, 0).dump()).status,
      200);

  // Never on the command line, which every local user can read.
  const std::string cmdline = command_line(pid);
  ASSERT_FALSE(cmdline.empty());
  EXPECT_EQ(cmdline.find(key), std::string::npos) << cmdline;
  // Never in anything the router shows.
  for (const char* path : {"/api/v1/health", "/api/v1/system-info", "/api/v1/stats",
                           "/api/v1/metrics", "/api/v1/models"}) {
    HttpReply r = http_get(port(), path);
    EXPECT_EQ(r.body.find(key), std::string::npos) << path << " shows the backend's key";
  }
  EXPECT_EQ(router().log_text().find(key), std::string::npos)
      << "the router's trace log shows the backend's key";
  EXPECT_EQ(router().stdout_text().find(key), std::string::npos);

  // A new process, a new secret.
  ASSERT_EQ(http_post(port(), "/api/v1/unload", json{{"model_name", "user.a"}}).status, 200);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  const std::string second = environment_value(loaded_pid(port(), "user.a"), "LLAMA_API_KEY");
  EXPECT_EQ(second.size(), 64u);
  EXPECT_NE(second, key);
}

TEST_F(BackendAccessTest, WhisperServesOnlyUnderItsSecretPath) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w"));
  const std::string url = loaded_field(health(port()), "user.w", "backend_url");
  // whisper-server's own routes, at their usual paths, are not there: not its
  // inference, not its /load (which would load any file a page names).
  EXPECT_EQ(url_get(url, "/health").status, 404);
  for (const char* path : {"/inference", "/load"}) {
    HttpReply r = url_request(url, "POST", path, "");
    EXPECT_EQ(r.status, 404) << path << ": " << r.body;
  }
  // Through the router, a transcription works.
  const std::string wav = wav_bytes(16000);
  HttpReply t = raw_request(port(), "POST", "/api/v1/audio/transcriptions",
                            {{"Content-Type", multipart_content_type()}},
                            multipart_body({form_file("file", wav, "speech.wav", "audio/wav"),
                                            form_field("model", "user.w")}));
  EXPECT_EQ(t.status, 200) << t.body;
}

}  // namespace
}  // namespace lemon::testing
