// Request timeouts (issue #11 §6, seed 004): --request-timeout bounds a
// non-streaming request end to end (504), --stream-idle-timeout bounds the gap
// between a stream's chunks (an SSE error event, then [DONE]), and
// --backend-idle-timeout bounds the time without a byte from the backend for
// both (issue #11 §3b); the message names the flag that fired, the backend
// sees its request cancelled, and the router stays healthy.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using TimeoutsTest = RouterTest;

// The fake backend's URL for `model`, which must be loaded.
std::string backend_url(int port, const std::string& model) {
  return loaded_field(health(port), model, "backend_url").get<std::string>();
}

// The fake counts a request whose client (the router) went away before the
// answer ended as cancelled.
bool backend_saw_cancels(const std::string& url, int count) {
  return eventually([&] { return fake_state(url)["cancelled"] == count; });
}

// The last two events of a stream are one error event naming `flag` (in the
// envelope, gateway_timeout) and [DONE].
void expect_timeout_event(const std::vector<SseEvent>& events, const std::string& flag) {
  ASSERT_GE(events.size(), 2u);
  EXPECT_TRUE(events.back().is_done());
  auto error = nlohmann::json::parse(events[events.size() - 2].data, nullptr, false);
  ASSERT_TRUE(is_error_envelope(error)) << events[events.size() - 2].data;
  EXPECT_EQ(error["error"]["code"], "gateway_timeout");
  EXPECT_NE(error["error"]["message"].get<std::string>().find(flag), std::string::npos)
      << error.dump();
}

TEST_F(TimeoutsTest, ANonStreamingRequestPastTheRequestTimeoutGets504) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--request-timeout", "1"}));
  // The fake answers after 5 s; the router gives up after 1 s (and a quick
  // request below must still fit in it on a loaded machine).
  HttpReply r = chat(port(), "user.a", {{"lemon_fake", {{"response_delay_ms", 5000}}}});
  EXPECT_EQ(r.status, 504) << r.body;
  ASSERT_TRUE(is_error_envelope(r.json())) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "gateway_timeout");
  EXPECT_NE(r.body.find("--request-timeout"), std::string::npos) << r.body;
  const std::string url = backend_url(port(), "user.a");
  EXPECT_TRUE(backend_saw_cancels(url, 1)) << fake_state(url).dump();
  // A quick request still works.
  HttpReply ok = chat(port(), "user.a", {{"max_tokens", 2}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(TimeoutsTest, AStreamSilentPastTheIdleTimeoutEndsWithAnErrorEvent) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--stream-idle-timeout", "1"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  // Chunks 5 s apart: the first arrives, the gap after it is too long.
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 3, 5000).dump());
  ASSERT_TRUE(s.read_head());
  EXPECT_EQ(s.status(), 200);
  // (--backend-idle-timeout, 600 s by default, is the larger bound.)
  ASSERT_NO_FATAL_FAILURE(expect_timeout_event(s.rest(), "--stream-idle-timeout"));
  const std::string url = backend_url(port(), "user.a");
  EXPECT_TRUE(backend_saw_cancels(url, 1)) << fake_state(url).dump();
  // A stream whose chunks come in time is untouched.
  SseStream quick(port(), "/api/v1/chat/completions", stream_body("user.a", 3, 0).dump());
  ASSERT_TRUE(quick.read_head());
  auto fine = quick.rest();
  ASSERT_FALSE(fine.empty());
  EXPECT_TRUE(fine.back().is_done());
  for (const auto& e : fine) {
    EXPECT_EQ(e.data.find("gateway_timeout"), std::string::npos) << e.data;
  }
}

TEST_F(TimeoutsTest, ABackendSilentPastTheBackendIdleTimeoutGets504AndIsCancelled) {
  // Silent, and its /slots does not show it working either (a backend that
  // does is waited for: LongPromptTest).
  env_.write_sidecar(env_.add_llm("a"), {{"slots_report_idle", true}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--backend-idle-timeout", "1"}));
  // The fake sends its head at once, then nothing for 5 s.
  HttpReply r = chat(port(), "user.a", {{"lemon_fake", {{"response_delay_ms", 5000}}}});
  EXPECT_EQ(r.status, 504) << r.body;
  ASSERT_TRUE(is_error_envelope(r.json())) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "gateway_timeout");
  EXPECT_NE(r.body.find("--backend-idle-timeout"), std::string::npos) << r.body;
  const std::string url = backend_url(port(), "user.a");
  EXPECT_TRUE(backend_saw_cancels(url, 1)) << fake_state(url).dump();
  // A reply that keeps coming is untouched.
  HttpReply ok = chat(port(), "user.a", {{"max_tokens", 2}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(TimeoutsTest, AStreamGetsTheSmallerIdleBoundWhenItIsTheBackendIdleTimeout) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--stream-idle-timeout", "30", "--backend-idle-timeout", "0.3"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 3, 2000).dump());
  ASSERT_TRUE(s.read_head());
  EXPECT_EQ(s.status(), 200);
  ASSERT_NO_FATAL_FAILURE(expect_timeout_event(s.rest(), "--backend-idle-timeout"));
  const std::string url = backend_url(port(), "user.a");
  EXPECT_TRUE(backend_saw_cancels(url, 1)) << fake_state(url).dump();
}

}  // namespace
}  // namespace lemon::testing
