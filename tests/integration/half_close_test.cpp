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

using HalfCloseTest = RouterTest;

std::string post(int port, const nlohmann::json& body) {
  const std::string text = body.dump();
  return "POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
         "\r\nConnection: close\r\n\r\n" + text;
}

TEST_F(HalfCloseTest, ANonStreamingRequestIsAnsweredAfterTheClientHalfCloses) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a").status, 200);
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
  auto state = fake_state(loaded_field(health(port()), "user.a", "backend_url"));
  EXPECT_EQ(state["cancelled"], 0) << state.dump();
  EXPECT_EQ(state["completed"], 1) << state.dump();
}

TEST_F(HalfCloseTest, AStreamGoesOnAfterTheClientHalfCloses) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  RawClient c(port());
  ASSERT_TRUE(c.send(post(port(), stream_body("user.a", 5, 50))));
  c.shutdown_write();
  std::string all;
  ASSERT_TRUE(c.read_to_eof(&all)) << all;
  EXPECT_NE(all.find("HTTP/1.1 200 OK"), std::string::npos) << all;
  EXPECT_NE(all.find("data: [DONE]"), std::string::npos) << all;
  auto state = fake_state(loaded_field(health(port()), "user.a", "backend_url"));
  EXPECT_EQ(state["cancelled"], 0) << state.dump();
}

TEST_F(HalfCloseTest, AHalfCloseMidStreamGetsAnSseCommentProbeAndTheRestOfTheStream) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  RawClient c(port());
  ASSERT_TRUE(c.send(post(port(), stream_body("user.a", 6, 100))));
  ASSERT_NE(c.read_until("data: ").find("200 OK"), std::string::npos);
  c.shutdown_write();
  std::string rest;
  ASSERT_TRUE(c.read_to_eof(&rest)) << rest;
  EXPECT_NE(rest.find(": \n\n"), std::string::npos) << "the probe between two events: " << rest;
  EXPECT_NE(rest.find("data: [DONE]"), std::string::npos) << rest;
  auto state = fake_state(loaded_field(health(port()), "user.a", "backend_url"));
  EXPECT_EQ(state["cancelled"], 0) << state.dump();
  EXPECT_EQ(state["completed"], 1) << state.dump();
}

TEST_F(HalfCloseTest, AnHttp10ClientThatHalfClosesIsTreatedAsGone) {
  // HTTP/1.0 allows no interim responses, so there is no probe to tell a
  // half-close from a full close: the request is cancelled.
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  RawClient c(port());
  std::string request =
      post(port(), chat_body("user.a", {{"lemon_fake", {{"response_delay_ms", 30000}}}}));
  request.replace(request.find("HTTP/1.1"), 8, "HTTP/1.0");
  ASSERT_TRUE(c.send(request));
  ASSERT_TRUE(eventually([&] { return fake_state(url)["active"] == 1; }));
  c.shutdown_write();
  nlohmann::json state;
  EXPECT_TRUE(eventually([&] {
    state = fake_state(url);
    return state["cancelled"] == 1;
  })) << state.dump();
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
}

TEST_F(HalfCloseTest, AFullDisconnectStillCancelsTheBackendRequest) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  {
    RawClient c(port());
    ASSERT_TRUE(c.send(
        post(port(), chat_body("user.a", {{"lemon_fake", {{"response_delay_ms", 30000}}}}))));
    ASSERT_TRUE(eventually([&] { return fake_state(url)["active"] == 1; }));
  }  // closed entirely
  nlohmann::json state;
  EXPECT_TRUE(eventually([&] {
    state = fake_state(url);
    return state["cancelled"] == 1;
  })) << state.dump();
}

}  // namespace
}  // namespace lemon::testing
