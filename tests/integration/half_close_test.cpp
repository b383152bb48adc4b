// A client that shuts down its sending side after its request (a
// half-close, e.g. `nc -N` or a proxy that half-closes) still gets its
// response, streaming or not; only a full disconnect cancels (issue #11 §3).
// The router probes such a client with an interim "100 Continue", which a
// client that really went away answers with a reset.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

std::string post(int port, const nlohmann::json& body) {
  const std::string text = body.dump();
  return "POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
         "\r\nConnection: close\r\n\r\n" + text;
}

class HalfCloseTest : public RouterTest {
 protected:
  // Starts the router with user.a loaded; returns its backend's URL, or ""
  // after a failure.
  std::string start_with_a_loaded() {
    env_.add_llm("a");
    start_router();
    if (HasFatalFailure() || load(port(), "user.a").status != 200) {
      ADD_FAILURE() << "the router did not start with user.a loaded";
      return {};
    }
    return loaded_field(health(port()), "user.a", "backend_url");
  }
  // A chat the fake holds for 30 s, so only a cancel ends it early.
  std::string slow_chat() {
    return post(port(), chat_body("user.a", {{"lemon_fake", {{"response_delay_ms", 30000}}}}));
  }
  static void expect_completed_not_cancelled(const std::string& url) {
    auto state = fake_state(url);
    EXPECT_EQ(state["cancelled"], 0) << state.dump();
    EXPECT_EQ(state["completed"], 1) << state.dump();
  }
  static void expect_cancelled(const std::string& url) {
    nlohmann::json state;
    EXPECT_TRUE(eventually([&] {
      state = fake_state(url);
      return state["cancelled"] == 1;
    })) << state.dump();
  }
};

TEST_F(HalfCloseTest, ANonStreamingRequestIsAnsweredAfterTheClientHalfCloses) {
  const std::string url = start_with_a_loaded();
  ASSERT_FALSE(url.empty());
  RawClient c(port());
  ASSERT_TRUE(c.send(post(
      port(),
      chat_body("user.a", {{"max_tokens", 3}, {"lemon_fake", {{"response_delay_ms", 300}}}}))));
  c.shutdown_write();
  std::string all;
  ASSERT_TRUE(c.read_to_eof(&all)) << all;
  EXPECT_EQ(all.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << "the probe comes first: " << all;
  EXPECT_NE(all.find("HTTP/1.1 200 OK"), std::string::npos) << all;
  EXPECT_NE(all.find("\"choices\""), std::string::npos) << all;
  expect_completed_not_cancelled(url);
}

TEST_F(HalfCloseTest, AStreamGoesOnAfterTheClientHalfCloses) {
  const std::string url = start_with_a_loaded();
  ASSERT_FALSE(url.empty());
  RawClient c(port());
  ASSERT_TRUE(c.send(post(port(), stream_body("user.a", 5, 50))));
  c.shutdown_write();
  std::string all;
  ASSERT_TRUE(c.read_to_eof(&all)) << all;
  EXPECT_NE(all.find("HTTP/1.1 200 OK"), std::string::npos) << all;
  EXPECT_NE(all.find("data: [DONE]"), std::string::npos) << all;
  expect_completed_not_cancelled(url);
}

TEST_F(HalfCloseTest, AHalfCloseMidStreamGetsAnSseCommentProbeAndTheRestOfTheStream) {
  const std::string url = start_with_a_loaded();
  ASSERT_FALSE(url.empty());
  RawClient c(port());
  // The fake holds each token after the first until the test releases it:
  // the half-close comes mid-stream, whatever the machine's load.
  nlohmann::json body = stream_body("user.a", 6, 0);
  body["lemon_fake"]["gate"] = "tokens";
  ASSERT_TRUE(c.send(post(port(), body)));
  ASSERT_NE(c.read_until("data: ").find("200 OK"), std::string::npos);
  c.shutdown_write();
  std::string rest;
  for (int i = 1; i < 6; ++i) {
    ASSERT_TRUE(fake_reached_gate(url, i)) << "token " << i;
    release_fake_gates(url);
  }
  ASSERT_TRUE(c.read_to_eof(&rest)) << rest;
  EXPECT_NE(rest.find(": \n\n"), std::string::npos) << "the probe between two events: " << rest;
  EXPECT_NE(rest.find("data: [DONE]"), std::string::npos) << rest;
  expect_completed_not_cancelled(url);
}

TEST_F(HalfCloseTest, AnHttp10ClientThatHalfClosesIsTreatedAsGone) {
  // HTTP/1.0 allows no interim responses, so there is no probe to tell a
  // half-close from a full close: the request is cancelled.
  const std::string url = start_with_a_loaded();
  ASSERT_FALSE(url.empty());
  RawClient c(port());
  std::string request = slow_chat();
  request.replace(request.find("HTTP/1.1"), 8, "HTTP/1.0");
  ASSERT_TRUE(c.send(request));
  ASSERT_TRUE(eventually([&] { return fake_state(url)["active"] == 1; }));
  c.shutdown_write();
  expect_cancelled(url);
}

TEST_F(HalfCloseTest, AHalfCloseWhileTheModelLoadsStillGetsTheAnswer) {
  const std::string file = env_.add_llm("a");
  env_.write_sidecar(file, {{"startup_delay_ms", 500}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  RawClient c(port());
  ASSERT_TRUE(c.send(post(port(), chat_body("user.a", {{"max_tokens", 2}}))));
  c.shutdown_write();
  std::string all;
  ASSERT_TRUE(c.read_to_eof(&all)) << all;
  EXPECT_NE(all.find("HTTP/1.1 200 OK"), std::string::npos) << all;
  expect_completed_not_cancelled(loaded_field(health(port()), "user.a", "backend_url"));
}

TEST_F(HalfCloseTest, AFullDisconnectStillCancelsTheBackendRequest) {
  const std::string url = start_with_a_loaded();
  ASSERT_FALSE(url.empty());
  {
    RawClient c(port());
    ASSERT_TRUE(c.send(slow_chat()));
    ASSERT_TRUE(eventually([&] { return fake_state(url)["active"] == 1; }));
  }  // closed entirely
  expect_cancelled(url);
}

}  // namespace
}  // namespace lemon::testing
