// Client disconnects (issue #3, docs/api.md "Inference"): when the client
// goes away the backend request is cancelled at once — during prompt
// processing, while a non-streaming answer is computed, and mid-stream — and
// the server's in-flight count drops. Checked from the fake backend's side
// (/fake/state "cancelled" and "active"). A client that leaves while its model
// loads does not stop the load.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using Clock = std::chrono::steady_clock;

// "Promptly": the backend's delays are 30 s or more, so anything under this
// proves the cancellation, with room for a loaded machine.
constexpr std::chrono::milliseconds kPrompt{5000};

class DisconnectTest : public RouterTest {
 protected:
  // Loads user.a and returns its backend URL.
  std::string load_a() {
    load_ok("user.a");
    auto url = loaded_field(health(port()), "user.a", "backend_url");
    EXPECT_TRUE(url.is_string());
    return url.is_string() ? url.get<std::string>() : std::string();
  }

  // Waits until the fake reports `active` requests in progress.
  bool wait_active(const std::string& url, int active) {
    return eventually([&] { return fake_state(url)["active"] == active; });
  }

  // After a disconnect: the fake counts one cancelled request and none
  // active, within kPrompt, and /health shows in_flight 0.
  void expect_cancelled(const std::string& url, Clock::time_point disconnected_at) {
    nlohmann::json state;
    bool cancelled = eventually(
        [&] {
          state = fake_state(url);
          return state["cancelled"] == 1 && state["active"] == 0;
        },
        kPrompt);
    auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - disconnected_at);
    EXPECT_TRUE(cancelled) << "the backend request was not cancelled within " << kPrompt.count()
                           << " ms: " << state.dump();
    EXPECT_EQ(state["requests"], 1) << state.dump();
    EXPECT_EQ(state["completed"], 0) << state.dump();
    nlohmann::json h;
    EXPECT_TRUE(eventually(
        [&] {
          h = health(port());
          return loaded_field(h, "user.a", "in_flight") == 0;
        },
        kPrompt))
        << h.dump();
    RecordProperty("cancel_ms", static_cast<int>(took.count()));
  }

  // A client leaves while its model is still loading: the load is not
  // abandoned, the request is never sent to the backend, and nothing stays in
  // flight.
  void leave_during_load(bool stream) {
    SseStream s(port(), "/api/v1/chat/completions",
                chat_body("user.a", {{"stream", stream}}).dump());
    ASSERT_TRUE(s.connected());
    ASSERT_TRUE(router().wait_for_log("starting user.a"));
    s.disconnect();
    ASSERT_TRUE(router().wait_for_log("loaded 'user.a'")) << "the load did not complete";
    nlohmann::json h;
    ASSERT_TRUE(eventually([&] {
      h = health(port());
      return loaded_field(h, "user.a", "in_flight") == 0;
    })) << h.dump();
    auto url = loaded_field(h, "user.a", "backend_url");
    ASSERT_TRUE(url.is_string()) << h.dump();
    auto state = fake_state(url);
    EXPECT_EQ(state["active"], 0) << state.dump();
    EXPECT_EQ(state["completed"], 0)
        << "an answer was computed for a client that had left: " << state.dump();
    // The model serves the next request.
    HttpReply r = chat(port(), "user.a", {{"max_tokens", 1}});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(router().count_log("starting user.a"), 1);
  }
};

TEST_F(DisconnectTest, AStreamingClientLeavingDuringPromptProcessingCancelsTheBackend) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string url = load_a();
  ASSERT_FALSE(url.empty());

  SseStream s(
      port(), "/api/v1/chat/completions",
      chat_body("user.a", {{"stream", true}, {"lemon_fake", {{"response_delay_ms", 30000}}}})
          .dump());
  ASSERT_TRUE(s.connected());
  ASSERT_TRUE(wait_active(url, 1)) << fake_state(url).dump();
  EXPECT_EQ(loaded_field(health(port()), "user.a", "in_flight"), 1);
  s.disconnect();
  expect_cancelled(url, Clock::now());
}

TEST_F(DisconnectTest, ANonStreamingClientLeavingCancelsTheBackend) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string url = load_a();
  ASSERT_FALSE(url.empty());

  SseStream s(port(), "/api/v1/chat/completions",
              chat_body("user.a", {{"lemon_fake", {{"response_delay_ms", 30000}}}}).dump());
  ASSERT_TRUE(s.connected());
  ASSERT_TRUE(wait_active(url, 1)) << fake_state(url).dump();
  EXPECT_EQ(loaded_field(health(port()), "user.a", "in_flight"), 1);
  s.disconnect();
  expect_cancelled(url, Clock::now());
}

TEST_F(DisconnectTest, AClientLeavingMidStreamCancelsTheBackend) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string url = load_a();
  ASSERT_FALSE(url.empty());

  SseStream s(
      port(), "/api/v1/chat/completions",
      chat_body("user.a", {{"stream", true},
                           {"lemon_fake", {{"stream_chunk_delay_ms", 200}, {"tokens", 100000}}}})
          .dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  for (int i = 0; i < 2; ++i) {
    auto ev = s.next();
    ASSERT_TRUE(ev.has_value()) << "chunk " << i;
    ASSERT_FALSE(ev->data.empty()) << "chunk " << i;
  }
  EXPECT_EQ(fake_state(url)["active"], 1);
  s.disconnect();
  expect_cancelled(url, Clock::now());
}

TEST_F(DisconnectTest, AClientLeavingDuringALoadDoesNotStopTheLoad) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"startup_delay_ms", 3000}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  leave_during_load(false);
}

TEST_F(DisconnectTest, AStreamingClientLeavingDuringALoadDoesNotStopTheLoad) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"startup_delay_ms", 3000}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  leave_during_load(true);
}

}  // namespace
}  // namespace lemon::testing
