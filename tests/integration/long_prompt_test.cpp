// Long prompts on slow hardware (issue #26): while a backend reads a long
// prompt a stream hears ": ping" every --stream-heartbeat (between events
// only, the response's head first when the backend has sent none); the
// router asks llama-server for its prompt progress, reads it as activity
// that resets the idle timeouts and forwards it only to a client that asked;
// a silent backend whose /slots shows a slot processing is not idle, one
// that shows none still times out; a client that leaves during the prefill
// cancels the backend's task; --max-prefill-tokens refuses a prompt the
// backend counts as too long, and counts nothing when off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/http_client.h"
#include "support/router_events.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using nlohmann::json;
using LongPromptTest = RouterTest;

// A streamed chat whose fake backend spends `prefill_ms` on the prompt, then
// sends `tokens` tokens `chunk_ms` apart.
json slow_prompt_stream(int prefill_ms, int tokens = 3, int chunk_ms = 0) {
  return chat_body("user.a", {{"stream", true},
                              {"lemon_fake",
                               {{"response_delay_ms", prefill_ms},
                                {"tokens", tokens},
                                {"stream_chunk_delay_ms", chunk_ms}}}});
}

struct StreamRead {
  int status = 0;
  std::vector<SseEvent> events;
  int pings_before_first_data = 0;
  int pings = 0;
  int backend_pings = 0;   // llama-server's own ":" comments, passed through
  std::vector<json> data;  // every data event but [DONE], parsed
  bool done = false;
  std::int64_t silence_ms = 0;  // from sending the request to the first data event
};

StreamRead read_stream(int port, const json& body,
                       const std::string& path = "/api/v1/chat/completions") {
  const std::int64_t sent = monotonic_ns();
  SseStream s(port, path, body.dump());
  StreamRead out;
  EXPECT_TRUE(s.read_head());
  out.status = s.status();
  out.events = s.rest_with_comments();
  EXPECT_TRUE(s.ended_cleanly());
  for (const auto& e : out.events) {
    if (e.is_comment()) {
      for (const auto& c : e.comments) {
        if (c == "ping") {
          ++out.pings;
          out.pings_before_first_data += out.data.empty() ? 1 : 0;
        } else if (c.empty()) {
          ++out.backend_pings;
        }
      }
    } else if (e.is_done()) {
      out.done = true;
    } else if (!e.data.empty()) {
      if (out.data.empty()) {
        out.silence_ms = (e.arrival_ns - sent) / 1'000'000;
      }
      out.data.push_back(json::parse(e.data, nullptr, false));
    }
  }
  return out;
}

bool any_progress(const std::vector<json>& data) {
  for (const auto& d : data) {
    if (d.contains("prompt_progress")) {
      return true;
    }
  }
  return false;
}

TEST_F(LongPromptTest, HeartbeatsArriveAtTheirRateWhileTheBackendReadsThePrompt) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--stream-heartbeat", "0.05"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  StreamRead r = read_stream(port(), slow_prompt_stream(1500));
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.data.size(), 3u + 1u) << "3 tokens and the final chunk";
  // Some came, and never more than one per 50 ms of the silence the client
  // saw (a window that contains the router's).
  EXPECT_GE(r.pings_before_first_data, 2);
  EXPECT_LE(r.pings_before_first_data, r.silence_ms / 50 + 1) << r.silence_ms << " ms";
  EXPECT_FALSE(any_progress(r.data)) << "progress the client did not ask for was forwarded";
}

TEST_F(LongPromptTest, HeartbeatsGoOnlyBetweenEventsAndInAnySilence) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--stream-heartbeat", "0.05"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  // Silent gaps between tokens, too: pings come there, each its own event.
  StreamRead r = read_stream(port(), slow_prompt_stream(0, 4, 400));
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.done);
  EXPECT_GE(r.pings - r.pings_before_first_data, 1) << "no heartbeat between tokens";
  for (const auto& e : r.events) {
    // An event is a ping or data, never both (a ping inside an event would
    // have joined its lines).
    EXPECT_TRUE(e.is_comment() || e.comments.empty()) << e.data;
  }
  for (const auto& d : r.data) {
    EXPECT_FALSE(d.is_discarded()) << "a data event was cut by a ping";
  }
}

TEST_F(LongPromptTest, ABackendThatSendsNothingYetStillGetsTheClientHeartbeats) {
  env_.add_llm("a");
  // An older llama-server answers its head only with its first result.
  env_.write_sidecar(env_.models_dir() + "/a.gguf", {{"head_delay_ms", 1000}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--stream-heartbeat", "0.05"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  SseStream s(port(), "/api/v1/chat/completions", slow_prompt_stream(0).dump());
  ASSERT_TRUE(s.read_head());
  EXPECT_EQ(s.status(), 200);
  EXPECT_EQ(s.header("content-type"), "text/event-stream");
  auto first = s.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->is_comment()) << "the first event is a heartbeat: " << first->data;
  auto rest = s.rest();
  int data_events = 0;
  for (const auto& e : rest) {
    data_events += !e.data.empty() && !e.is_done() ? 1 : 0;
  }
  EXPECT_EQ(data_events, 4) << "3 tokens and the final chunk";
  EXPECT_TRUE(s.ended_cleanly());
}

TEST_F(LongPromptTest, ProgressKeepsALongPrefillAliveAndReachesOnlyAClientThatAsked) {
  env_.add_llm("a");
  env_.write_sidecar(env_.models_dir() + "/a.gguf", {{"prefill_progress_ms", 100}});
  // The prefill (1.5 s) is three times the idle bound.
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--backend-idle-timeout", "0.5", "--stream-heartbeat", "0"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  StreamRead quiet = read_stream(port(), slow_prompt_stream(1500));
  ASSERT_EQ(quiet.status, 200);
  EXPECT_TRUE(quiet.done) << "the prefill was cut";
  EXPECT_EQ(quiet.data.size(), 4u);
  EXPECT_FALSE(any_progress(quiet.data));
  EXPECT_EQ(quiet.pings, 0) << "--stream-heartbeat 0 sends none";
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  EXPECT_FALSE(fake_state(url)["last_request"].contains("return_progress"))
      << "nobody follows request events: the backend is not asked for progress (issue #27); "
         "its busy slot kept the prefill alive";

  json asked = slow_prompt_stream(1500);
  asked["return_progress"] = true;
  StreamRead told = read_stream(port(), asked);
  ASSERT_EQ(told.status, 200);
  EXPECT_TRUE(told.done);
  ASSERT_TRUE(any_progress(told.data)) << "the client asked for progress";
  // llama-server's shape: the last report is the whole prompt.
  json last;
  for (const auto& d : told.data) {
    if (d.contains("prompt_progress")) {
      last = d["prompt_progress"];
    }
  }
  EXPECT_GT(last["total"].get<long long>(), 0) << last.dump();
  EXPECT_EQ(last["processed"], last["total"]) << last.dump();
  EXPECT_GE(told.data.size(), 4u + 3u) << "0 %, some, 100 %: at least 3 progress events";
  EXPECT_EQ(fake_state(url)["last_request"]["return_progress"], true);

  // While someone follows request events, the router asks for progress
  // itself and drops it from a stream that did not ask.
  RouterEvents events(port());
  StreamRead followed = read_stream(port(), slow_prompt_stream(1500));
  ASSERT_EQ(followed.status, 200);
  EXPECT_TRUE(followed.done);
  EXPECT_FALSE(any_progress(followed.data));
  EXPECT_EQ(fake_state(url)["last_request"]["return_progress"], true);
}

TEST_F(LongPromptTest, ASilentBackendIsNotIdleWhileItsSlotProcesses) {
  env_.add_llm("a");
  // A llama-server that reports no progress, but whose /slots shows the work.
  env_.write_sidecar(env_.models_dir() + "/a.gguf", {{"ignore_return_progress", true}});
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--backend-idle-timeout", "0.5", "--stream-heartbeat", "0"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  StreamRead streamed = read_stream(port(), slow_prompt_stream(1500));
  EXPECT_TRUE(streamed.done);
  EXPECT_EQ(streamed.data.size(), 4u);
  // Not streaming: nothing comes until the whole answer; still not idle.
  HttpReply whole = chat(port(), "user.a", {{"lemon_fake", {{"response_delay_ms", 1500}}}});
  EXPECT_EQ(whole.status, 200) << whole.body;
}

// llama-server writes its own SSE comment, ":", when a stream has been
// silent for --sse-ping-interval (or the request's "sse_ping_interval")
// seconds. It is not the answer starting: the prefill check stays on.
TEST_F(LongPromptTest, TheBackendsOwnPingsDoNotCutAPrefillItsSlotIsWorkingOn) {
  env_.add_llm("a");
  env_.write_sidecar(env_.models_dir() + "/a.gguf", {{"ignore_return_progress", true}});
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--backend-idle-timeout", "0.5", "--stream-heartbeat", "0"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  json body = slow_prompt_stream(3500);
  body["sse_ping_interval"] = 1;
  StreamRead streamed = read_stream(port(), body);
  EXPECT_EQ(streamed.status, 200);
  EXPECT_GE(streamed.backend_pings, 2) << "the fake pinged during its 3.5 s prefill";
  EXPECT_TRUE(streamed.done);
  ASSERT_EQ(streamed.data.size(), 4u) << "3 tokens and the final chunk, no error event";
  for (const auto& d : streamed.data) {
    EXPECT_FALSE(d.contains("error")) << d.dump();
  }
}

// The same pings from a backend whose slot is idle keep nothing alive: the
// silence is counted from the head, and the bound ends the stream.
TEST_F(LongPromptTest, TheBackendsOwnPingsDoNotKeepAnIdleSlotsRequestAlive) {
  env_.add_llm("a");
  env_.write_sidecar(env_.models_dir() + "/a.gguf",
                     {{"ignore_return_progress", true}, {"slots_report_idle", true}});
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--backend-idle-timeout", "1.5", "--stream-heartbeat", "0"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  json body = slow_prompt_stream(30000);
  body["sse_ping_interval"] = 1;
  const std::int64_t started = monotonic_ns();
  StreamRead streamed = read_stream(port(), body);
  const std::int64_t took_ms = (monotonic_ns() - started) / 1'000'000;
  EXPECT_EQ(streamed.status, 200);
  EXPECT_GE(streamed.backend_pings, 1) << "a ping came before the bound passed";
  ASSERT_FALSE(streamed.data.empty());
  EXPECT_EQ(streamed.data.back()["error"]["code"], "gateway_timeout")
      << streamed.data.back().dump();
  EXPECT_LT(took_ms, 15000) << "ended by the 1.5 s bound, not by the 30 s prefill";
}

TEST_F(LongPromptTest, ASilentBackendWithAnIdleSlotTimesOutAsBefore) {
  env_.add_llm("a");
  env_.write_sidecar(env_.models_dir() + "/a.gguf",
                     {{"ignore_return_progress", true}, {"slots_report_idle", true}});
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--backend-idle-timeout", "0.5", "--stream-heartbeat", "0"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  HttpReply whole = chat(port(), "user.a", {{"lemon_fake", {{"response_delay_ms", 5000}}}});
  EXPECT_EQ(whole.status, 504) << whole.body;
  EXPECT_EQ(whole.json()["error"]["code"], "gateway_timeout");
  StreamRead streamed = read_stream(port(), slow_prompt_stream(5000));
  ASSERT_FALSE(streamed.data.empty());
  EXPECT_EQ(streamed.data.back()["error"]["code"], "gateway_timeout")
      << streamed.data.back().dump();
  // Both backend requests were cancelled.
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  EXPECT_TRUE(eventually([&] { return fake_state(url)["cancelled"] == 2; }))
      << fake_state(url).dump();
}

TEST_F(LongPromptTest, AClientThatLeavesDuringThePrefillCancelsTheBackendsTask) {
  env_.add_llm("a");
  env_.write_sidecar(env_.models_dir() + "/a.gguf", {{"prefill_progress_ms", 100}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--stream-heartbeat", "0.05"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  {
    SseStream s(port(), "/api/v1/chat/completions", slow_prompt_stream(20000).dump());
    ASSERT_TRUE(s.read_head());
    auto ping = s.next();
    ASSERT_TRUE(ping.has_value());
    ASSERT_TRUE(ping->is_comment());
    s.disconnect();
  }
  EXPECT_TRUE(eventually([&] { return fake_state(url)["cancelled"] == 1; }))
      << fake_state(url).dump();
  EXPECT_TRUE(eventually([&] { return loaded_field(health(port()), "user.a", "in_flight") == 0; }));
  EXPECT_EQ(chat(port(), "user.a").status, 200) << "the next request is served";
}

TEST_F(LongPromptTest, PrefillProgressIsARequestEvent) {
  env_.add_llm("a");
  env_.write_sidecar(env_.models_dir() + "/a.gguf", {{"prefill_progress_ms", 100}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  RouterEvents events(port());
  StreamRead r = read_stream(port(), slow_prompt_stream(800));
  ASSERT_TRUE(r.done);
  auto progress = events.next("request", "user.a");
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ((*progress)["phase"], "prefill") << progress->dump();
  EXPECT_GT((*progress)["prefill_tokens_total"].get<long long>(), 0);
  const auto id = (*progress)["request_id"];
  // Progress until the whole prompt is read, then the request's end.
  std::optional<json> e;
  for (e = events.next("request", "user.a"); e && (*e)["phase"] == "prefill";
       e = events.next("request", "user.a")) {
    EXPECT_EQ((*e)["request_id"], id);
    EXPECT_LE((*e)["prefill_tokens_done"], (*e)["prefill_tokens_total"]);
  }
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)["phase"], "done");
  EXPECT_EQ((*e)["request_id"], id);
  EXPECT_EQ((*e)["status"], 200);
}

TEST_F(LongPromptTest, MaxPrefillTokensRefusesAPromptTheBackendCountsTooLong) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-prefill-tokens", "20"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  std::string long_text;
  for (int i = 0; i < 50; ++i) {
    long_text += "word ";
  }
  HttpReply refused = http_post(
      port(), "/api/v1/chat/completions",
      json{{"model", "user.a"}, {"messages", {{{"role", "user"}, {"content", long_text}}}}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "prompt_too_long");
  const std::string message = refused.json()["error"]["message"];
  EXPECT_NE(message.find("--max-prefill-tokens (20)"), std::string::npos) << message;
  EXPECT_NE(message.find(" tokens"), std::string::npos) << message;
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  EXPECT_EQ(fake_state(url)["requests"], 0) << "the refused prompt reached the backend";
  EXPECT_EQ(fake_state(url)["tokenizations"], 1);
  // A short prompt goes through; a completion is counted too.
  EXPECT_EQ(chat(port(), "user.a").status, 200);
  HttpReply completion =
      http_post(port(), "/api/v1/completions", json{{"model", "user.a"}, {"prompt", long_text}});
  EXPECT_EQ(completion.status, 400) << completion.body;
  EXPECT_EQ(completion.json()["error"]["param"], "prompt");
}

TEST_F(LongPromptTest, WithoutMaxPrefillTokensNothingIsCounted) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  EXPECT_EQ(chat(port(), "user.a").status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  EXPECT_EQ(fake_state(url)["tokenizations"], 0);
  EXPECT_EQ(fake_state(url)["template_applications"], 0);
}

TEST_F(LongPromptTest, AnthropicStreamsGetPingEventsAndOllamaStreamsOnlyJsonLines) {
  // Those dialects take no lemon_fake: the model's own knobs make it slow.
  const std::string model = env_.add_llm("s");
  env_.write_sidecar(model, {{"response_delay_ms", 800}, {"tokens", 3}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--stream-heartbeat", "0.05"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.s"));
  json anthropic = {{"model", "user.s"},
                    {"max_tokens", 3},
                    {"stream", true},
                    {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  SseStream a(port(), "/v1/messages", anthropic.dump());
  ASSERT_TRUE(a.read_head());
  EXPECT_EQ(a.status(), 200);
  int pings = 0;
  for (const auto& e : a.rest_with_comments()) {
    pings += e.event == "ping" ? 1 : 0;
    EXPECT_FALSE(e.is_comment()) << "Anthropic's stream carries ping events, not comments";
  }
  EXPECT_GE(pings, 2);

  json ollama = {
      {"model", "user.s"}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  SseStream o(port(), "/api/chat", ollama.dump());
  ASSERT_TRUE(o.read_head());
  EXPECT_EQ(o.status(), 200);
  const std::string body = o.read_body();
  std::size_t lines = 0;
  for (std::size_t start = 0, nl; (nl = body.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    const std::string line = body.substr(start, nl - start);
    EXPECT_FALSE(json::parse(line, nullptr, false).is_discarded()) << "not JSON: '" << line << "'";
    ++lines;
  }
  EXPECT_GE(lines, 4u) << body;
}

}  // namespace
}  // namespace lemon::testing
