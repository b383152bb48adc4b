// A backend that dies in the middle of a stream (issue #2 §7.7): the client
// gets the chunks sent so far, one error event in the envelope shape and
// [DONE], and a cleanly ended HTTP stream; the router drops the model and the
// next request loads it again.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using CrashTest = RouterTest;

TEST_F(CrashTest, ACrashMidStreamEndsTheStreamWithAnErrorEventAndTheModelReloads) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"crash_mid_stream_after_chunks", 2}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  pid_t crashed = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &crashed));
  ASSERT_GT(crashed, 0);
  PidWatch crashed_watch(crashed);

  SseStream s(port(), "/api/v1/chat/completions",
              chat_body("user.a", {{"stream", true}, {"max_tokens", 6}}).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  auto events = s.rest();
  EXPECT_TRUE(s.ended_cleanly()) << "the HTTP stream must end with its last chunk";
  ASSERT_EQ(events.size(), 4u) << "2 chunks, an error event and [DONE]";
  for (int i = 0; i < 2; ++i) {
    auto chunk = nlohmann::json::parse(events[i].data, nullptr, false);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk") << events[i].data;
  }
  auto error = nlohmann::json::parse(events[2].data, nullptr, false);
  EXPECT_TRUE(is_error_envelope(error)) << events[2].data;
  EXPECT_EQ(error["error"]["type"], "server_error") << events[2].data;
  EXPECT_NE(error["error"]["message"].get<std::string>().find("user.a"), std::string::npos)
      << events[2].data;
  EXPECT_TRUE(events[3].is_done());

  EXPECT_TRUE(router().wait_for_log("exited unexpectedly"));
  EXPECT_TRUE(crashed_watch.wait_exit(kWait));
  // The exit is logged just before the model is dropped from the table.
  EXPECT_TRUE(eventually([&] { return !loaded_entry(health(port()), "user.a").has_value(); }));

  env_.write_sidecar(a, nlohmann::json::object());
  HttpReply r = chat(port(), "user.a", {{"max_tokens", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "The quick");
  const int reloaded = loaded_pid(port(), "user.a");
  EXPECT_GT(reloaded, 0);
  EXPECT_NE(reloaded, crashed);
  EXPECT_EQ(router().count_log("starting user.a:"), 2);
}

TEST_F(CrashTest, ACrashMidResponsesStreamEndsWithTheResponsesApisErrorEvent) {
  // The Responses API has no [DONE]: its error is an `error` event whose
  // data is {"type":"error","code","message","param"}.
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"crash_mid_stream_after_chunks", 2}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  SseStream s(port(), "/v1/responses",
              nlohmann::json{{"model", "user.a"}, {"input", "Hi"}, {"stream", true}}.dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  auto events = s.rest();
  EXPECT_TRUE(s.ended_cleanly());
  ASSERT_GE(events.size(), 2u);
  for (const auto& e : events) {
    EXPECT_FALSE(e.is_done()) << "no [DONE] in a Responses stream";
  }
  const auto& last = events.back();
  EXPECT_EQ(last.event, "error") << last.data;
  auto error = nlohmann::json::parse(last.data, nullptr, false);
  EXPECT_EQ(error["type"], "error") << last.data;
  EXPECT_TRUE(error["code"].is_string()) << last.data;
  EXPECT_NE(error.value("message", "").find("user.a"), std::string::npos) << last.data;
  EXPECT_TRUE(error.contains("param")) << last.data;
  EXPECT_FALSE(error.contains("error")) << "not the chat envelope: " << last.data;
}

TEST_F(CrashTest, ACrashDuringANonStreamingRequestIsAnErrorEnvelope) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"crash_on_request", 1}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = chat(port(), "user.a");
  EXPECT_GE(r.status, 500) << r.body;
  EXPECT_TRUE(is_error_envelope(r.json())) << r.body;
  EXPECT_TRUE(router().wait_for_log("exited unexpectedly"));
  EXPECT_TRUE(eventually([&] { return !loaded_entry(health(port()), "user.a").has_value(); }));
}

// A backend that dies under a non-streaming request before it answered has
// sent nothing the client saw: the model is loaded again and the request
// sent once more (a stream that began is not).
TEST_F(CrashTest, ANonStreamingRequestWhoseBackendDiedBeforeAnsweringIsSentAgainOnce) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"crash_on_request", 2}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  pid_t first = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &first));
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  // The next server this model gets does not crash.
  env_.write_sidecar(a, nlohmann::json::object());
  HttpReply r = chat(port(), "user.a");
  EXPECT_EQ(r.status, 200) << r.body;
  // A closed connection is sent again at once, a reset one after
  // --backend-retry-delay (it may be a restart under way).
  EXPECT_EQ(
      router().count_log("sending the request once more") + router().count_log("did not answer"), 1)
      << router().log_text();
  const int again = loaded_pid(port(), "user.a");
  EXPECT_GT(again, 1);
  EXPECT_NE(again, first) << "answered by the server loaded again";
}

TEST_F(CrashTest, APinnedModelComesBackPinnedAfterItsBackendCrashed) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"crash_mid_stream_after_chunks", 1}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply pinned =
      load(port(), "user.a", {{"pinned", true}, {"priority", 3}, {"ctx_size", 2048}});
  ASSERT_EQ(pinned.status, 200) << pinned.body;
  const pid_t crashed = loaded_pid(port(), "user.a");
  ASSERT_GT(crashed, 0);
  PidWatch crashed_watch(crashed);

  SseStream s(port(), "/api/v1/chat/completions",
              chat_body("user.a", {{"stream", true}, {"max_tokens", 6}}).dump());
  ASSERT_TRUE(s.read_head());
  (void)s.rest();
  EXPECT_TRUE(crashed_watch.wait_exit(kWait));
  EXPECT_TRUE(eventually([&] { return !loaded_entry(health(port()), "user.a").has_value(); }));

  env_.write_sidecar(a, nlohmann::json::object());
  ASSERT_EQ(chat(port(), "user.a", {{"max_tokens", 2}}).status, 200);
  const nlohmann::json h = health(port());
  EXPECT_NE(loaded_field(h, "user.a", "pid"), crashed) << "a new backend";
  EXPECT_EQ(loaded_field(h, "user.a", "pinned"), true) << "the pin survives the crash";
  EXPECT_EQ(loaded_field(h, "user.a", "priority"), 3) << "and so does the priority";
  const int again = loaded_pid(port(), "user.a");
  ASSERT_GT(again, 0);
  EXPECT_NE(command_line(again).find("--ctx-size 2048"), std::string::npos)
      << "and the options its load gave: " << command_line(again);

  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.a"}}).status,
            200);
  ASSERT_EQ(chat(port(), "user.a", {{"max_tokens", 2}}).status, 200);
  EXPECT_EQ(loaded_field(health(port()), "user.a", "pinned"), false)
      << "an unload is no crash: the next load stands as saved";
}

}  // namespace
}  // namespace lemon::testing
