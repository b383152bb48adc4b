// The router against a real llama-server (LEMON_REAL_LLAMA_SERVER) and the
// tiny random-weight chat model: its secret keeps direct callers out
// (issue #24), and a long prompt is heartbeated, reported and never cut
// (issue #26).
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_events.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

TEST_F(RealLlamaTest, OnlyTheRouterGetsThroughToTheBackend) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router({"--log-level", "trace"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.tiny"));
  const std::string url = loaded_field(health(port()), "user.tiny", "backend_url");
  const int pid = loaded_pid(port(), "user.tiny");
  const std::string key = environment_value(pid, "LLAMA_API_KEY");
  ASSERT_EQ(key.size(), 64u);

  const std::string body = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":3})";
  HttpReply direct =
      url_request(url, "POST", "/v1/chat/completions", body, {{"Origin", "http://evil.example"}});
  EXPECT_EQ(direct.status, 401) << direct.body;
  EXPECT_EQ(direct.json()["error"]["type"], "authentication_error") << direct.body;
  for (const char* path : {"/slots", "/props"}) {
    EXPECT_EQ(url_get(url, path).status, 401) << path;
  }
  // With the key, as the router calls it.
  HttpReply keyed =
      url_request(url, "POST", "/v1/chat/completions", body, {{"Authorization", "Bearer " + key}});
  EXPECT_EQ(keyed.status, 200) << keyed.body;

  HttpReply routed = chat(port(), "user.tiny", {{"max_tokens", 3}});
  EXPECT_EQ(routed.status, 200) << routed.body;
  // The router's telemetry reads /slots with the key.
  EXPECT_EQ(http_get(port(), "/api/v1/metrics").status, 200);

  EXPECT_EQ(command_line(pid).find(key), std::string::npos);
  EXPECT_EQ(router().log_text().find(key), std::string::npos)
      << "the key is in the router's log (llama-server's own lines included)";
  EXPECT_EQ(health(port()).dump().find(key), std::string::npos);
}

// A prompt of about 4,000 tokens, read 64 tokens a batch on one thread (so
// that it takes longer than the heartbeat even on a fast CPU): the client hears
// heartbeats while llama-server reads it, gets its progress only when it
// asks, and the dashboard's events see it either way.
TEST_F(RealLlamaTest, ALongPromptIsHeartbeatedAndReported) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router({"--stream-heartbeat", "0.01"}));
  // The model was trained for 4,096 tokens, its server's context at most.
  ASSERT_EQ(
      load(port(), "user.tiny",
           {{"ctx_size", 4096}, {"llamacpp_args", "--threads 1 --batch-size 64 --ubatch-size 64"}})
          .status,
      200);
  std::string document;
  for (int i = 0; i < 700; ++i) {
    document += "the quick brown fox ";
  }
  // Nothing of the prompt in the slot's cache: the second pass reads it all
  // again.
  json body = {{"model", "user.tiny"},
               {"stream", true},
               {"max_tokens", 4},
               {"cache_prompt", false},
               {"messages", {{{"role", "user"}, {"content", document}}}}};

  RouterEvents events(port());
  for (bool asked : {false, true}) {
    if (asked) {
      body["return_progress"] = true;
    }
    SseStream s(port(), "/api/v1/chat/completions", body.dump());
    ASSERT_TRUE(s.read_head());
    ASSERT_EQ(s.status(), 200);
    int pings = 0;
    int progress = 0;
    json last_progress;
    bool done = false;
    for (const auto& e : s.rest_with_comments()) {
      if (e.is_comment()) {
        pings += 1;
      } else if (e.is_done()) {
        done = true;
      } else {
        json d = json::parse(e.data, nullptr, false);
        ASSERT_FALSE(d.is_discarded()) << e.data;
        EXPECT_FALSE(d.contains("error")) << e.data;
        if (d.contains("prompt_progress")) {
          ++progress;
          last_progress = d["prompt_progress"];
        }
      }
    }
    EXPECT_TRUE(done);
    EXPECT_TRUE(s.ended_cleanly());
    EXPECT_GE(pings, 1) << "no heartbeat while llama-server read the prompt";
    if (asked) {
      EXPECT_GE(progress, 3) << "0 %, batches, 100 %";
      EXPECT_GT(last_progress.value("total", 0LL), 3000) << last_progress.dump();
      EXPECT_EQ(last_progress["processed"], last_progress["total"]) << last_progress.dump();
    } else {
      EXPECT_EQ(progress, 0) << "progress the client did not ask for was forwarded";
    }
  }
  auto prefill = events.next("request", "user.tiny");
  ASSERT_TRUE(prefill.has_value());
  EXPECT_EQ((*prefill)["phase"], "prefill") << prefill->dump();
  EXPECT_GT(prefill->value("prefill_tokens_total", 0LL), 3000) << prefill->dump();
}

// A non-streaming request whose prompt takes longer to read than
// --backend-idle-timeout: llama-server's /slots shows it working, so it is
// not cut; the same server started with --no-slots (no /slots to ask) is.
TEST_F(RealLlamaTest, ANonStreamingLongPromptOutlastsTheIdleTimeout) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router({"--backend-idle-timeout", "0.05"}));
  std::string document;
  for (int i = 0; i < 700; ++i) {
    document += "the quick brown fox ";
  }
  const json body = {{"model", "user.tiny"},
                     {"max_tokens", 4},
                     {"cache_prompt", false},
                     {"messages", {{{"role", "user"}, {"content", document}}}}};
  ASSERT_EQ(load(port(), "user.tiny", {{"ctx_size", 4096}, {"llamacpp_args", "--no-slots"}}).status,
            200);
  HttpReply blind = http_post(port(), "/api/v1/chat/completions", body);
  EXPECT_EQ(blind.status, 504) << "the control: without /slots the prefill looks idle. "
                               << blind.body;
  ASSERT_EQ(load(port(), "user.tiny", {{"ctx_size", 4096}, {"llamacpp_args", ""}}).status, 200);
  HttpReply r = http_post(port(), "/api/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(r.json()["usage"]["prompt_tokens"].is_number()) << r.body;
  EXPECT_GT(r.json()["usage"]["prompt_tokens"].get<long long>(), 3000) << r.body;
}

// llama-server's own SSE ping (":" after --sse-ping-interval seconds of
// silence) during a long prefill is not the answer starting: the router's
// idle bound, shorter than the prefill, keeps asking /slots while a slot
// works, and the stream completes. The model is a random-weight llama wider
// than the tiny one (make_random_llama_gguf.py, written at test time), so
// that about 7,500 prompt tokens read 8 at a time on one thread take seconds.
TEST_F(RealLlamaTest, LlamaServersOwnPingsDuringAPrefillDoNotCutIt) {
  const std::string source = real_llama_source();
  if (source.empty()) {
    GTEST_SKIP() << "no llama.cpp source tree (LEMON_REAL_LLAMA_SRC, or the one "
                    "LEMON_REAL_LLAMA_SERVER was built in) to write the wider model with";
  }
  const std::string model = env_.models_dir() + "/wide.gguf";
  ASSERT_EQ(run_program({"env", "PYTHONPATH=" + source + "/gguf-py", "LLAMA_SRC=" + source,
                         real_python(), real_models_dir() + "/make_random_llama_gguf.py", model,
                         "--n-embd", "256", "--n-layer", "4", "--n-head", "4", "--n-head-kv", "2",
                         "--n-ff", "768", "--n-ctx", "8192"}),
            0)
      << "make_random_llama_gguf.py failed (it needs numpy and " << source << "/gguf-py)";
  env_.add_user_model("wide",
                      {{"checkpoint", model}, {"recipe", "llamacpp"}, {"source", "local_path"}});
  ASSERT_NO_FATAL_FAILURE(
      start_real_router({"--backend-idle-timeout", "2", "--stream-heartbeat", "0"}));
  ASSERT_EQ(
      load(port(), "user.wide",
           {{"ctx_size", 8192},
            {"llamacpp_args", "--threads 1 --batch-size 8 --ubatch-size 8 --sse-ping-interval 1"}})
          .status,
      200);
  std::string document;
  for (int i = 0; i < 1500; ++i) {
    document += "The keeper wrote. ";
  }
  const json body = {{"model", "user.wide"},
                     {"stream", true},
                     {"max_tokens", 4},
                     {"cache_prompt", false},
                     {"messages", {{{"role", "user"}, {"content", document}}}}};
  SseStream s(port(), "/api/v1/chat/completions", body.dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  int backend_pings = 0;
  int data_events = 0;
  bool done = false;
  for (const auto& e : s.rest_with_comments()) {
    if (e.is_comment()) {
      for (const auto& c : e.comments) {
        backend_pings += c.empty() && data_events == 0 ? 1 : 0;
      }
    } else if (e.is_done()) {
      done = true;
    } else {
      ++data_events;
      EXPECT_EQ(e.data.find("\"error\""), std::string::npos) << e.data;
    }
  }
  EXPECT_GE(backend_pings, 2) << "the prefill was too short to outlast two of llama-server's "
                                 "pings and the idle bound after the first";
  EXPECT_GT(data_events, 0);
  EXPECT_TRUE(done) << "the stream ended without [DONE]";
  EXPECT_TRUE(s.ended_cleanly());
}

// Issue #27: with the one slot busy, one request more waits inside
// llama-server's own queue and starts there when the slot frees; one whose
// client leaves while it waits there is let go, and the next still gets
// through. A third waits in the router's line.
TEST_F(RealLlamaTest, ARequestQueuedInsideLlamaServerStartsWhenTheSlotFrees) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router({"--parallel", "1"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.tiny"));
  const json messages = {{{"role", "user"}, {"content", "hi"}}};
  // Most of a second of tokens (the tiny model makes ~2,000 a second).
  const json long_stream = {{"model", "user.tiny"},
                            {"stream", true},
                            {"max_tokens", 1500},
                            {"ignore_eos", true},
                            {"messages", messages}};
  SseStream running(port(), "/api/v1/chat/completions", long_stream.dump());
  ASSERT_TRUE(running.read_head());
  auto slots = [&] { return loaded_field(health(port()), "user.tiny", "slots"); };
  const json short_chat = {{"model", "user.tiny"}, {"max_tokens", 2}, {"messages", messages}};
  SseStream leaving(port(), "/api/v1/chat/completions", short_chat.dump());
  ASSERT_TRUE(eventually([&] { return slots()["queued_in_backend"] == 1; })) << slots().dump();
  leaving.disconnect();
  ASSERT_TRUE(eventually([&] { return slots()["queued_in_backend"] == 0; }))
      << "the request whose client left still holds its lease: " << slots().dump();

  auto queued = std::async(std::launch::async, [&] {
    return chat(port(), "user.tiny", {{"max_tokens", 2}});
  });
  ASSERT_TRUE(eventually([&] { return slots()["queued_in_backend"] == 1; })) << slots().dump();
  auto waiting = std::async(std::launch::async, [&] {
    return chat(port(), "user.tiny", {{"max_tokens", 2}});
  });
  ASSERT_TRUE(eventually([&] { return slots()["waiting"] == 1; })) << slots().dump();
  const json during = slots();
  EXPECT_EQ(during["busy"], 1) << during.dump();
  auto events = running.rest(std::chrono::seconds(60));
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().is_done()) << "the long stream was cut";
  HttpReply first = queued.get();
  EXPECT_EQ(first.status, 200) << first.body;
  HttpReply second = waiting.get();
  EXPECT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(slots()["queued_in_backend"], 0);
}

// One SIGTERM (issue #27 §2): llama-server shuts down cleanly and exits 0;
// a second one would make it quit at once with status 1.
TEST_F(RealLlamaTest, AnUnloadedLlamaServerExitsCleanly) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.tiny"));
  ASSERT_EQ(chat(port(), "user.tiny", {{"max_tokens", 2}}).status, 200);
  RouterEvents events(port());
  ASSERT_EQ(http_post(port(), "/api/v1/unload", json{{"model_name", "user.tiny"}}).status, 200);
  auto stopped = events.next("server_stopped", "user.tiny");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["exit"], "exit code 0") << stopped->dump();
  RecordProperty("stop_ms", static_cast<int>((*stopped)["stop_s"].get<double>() * 1000));
}

}  // namespace
}  // namespace lemon::testing
