// Many open streams (issue #3): with 256 streaming requests open on one model
// (under the default --max-connections), /health and a new short chat request
// to the same model are still served while every stream stays open, and
// closing the streams brings the in-flight count back to 0. How fast they are
// served is measured by the benchmark (`lemon-bench`, "/health p99 with 256
// open streams", docs/benchmarks.md), not asserted here: a wall-clock budget
// in a test fails on a loaded machine (issue #23).
#include <memory>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using ManyStreamsTest = RouterTest;

constexpr int kStreams = 256;
constexpr int kSamples = 10;

TEST_F(ManyStreamsTest, HealthAndANewRequestAreServedWith256OpenStreams) {
  env_.add_llm("a");
  // Default --max-connections; enough llama.cpp slots that no request waits.
  ASSERT_NO_FATAL_FAILURE(start_router({"--parallel", std::to_string(kStreams + 1)}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  auto url_field = loaded_field(health(port()), "user.a", "backend_url");
  ASSERT_TRUE(url_field.is_string());
  const std::string url = url_field;

  // A token every 200 ms, far more tokens than the test lasts: every stream
  // stays open until the test closes it.
  const std::string body = stream_body("user.a", 100000, 200).dump();
  std::vector<std::unique_ptr<SseStream>> streams;
  streams.reserve(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<SseStream>(port(), "/api/v1/chat/completions", body));
    ASSERT_TRUE(streams.back()->connected()) << "stream " << i << " could not connect";
  }
  nlohmann::json state;
  ASSERT_TRUE(eventually([&] {
    state = fake_state(url);
    return state["active"] == kStreams;
  })) << "the backend never had all streams at once: "
      << state.dump();
  for (int i : {0, kStreams - 1}) {
    ASSERT_TRUE(streams[i]->read_head()) << "stream " << i;
    EXPECT_EQ(streams[i]->status(), 200) << "stream " << i;
  }
  EXPECT_EQ(loaded_field(health(port()), "user.a", "in_flight"), kStreams);

  for (int i = 0; i < kSamples; ++i) {
    HttpReply h = http_get(port(), "/api/v1/health");
    ASSERT_EQ(h.status, 200) << h.error << h.body;
    // The previous chat's lease may still be going as its answer ends.
    nlohmann::json now;
    EXPECT_TRUE(eventually([&] {
      now = health(port());
      return loaded_field(now, "user.a", "in_flight") == kStreams;
    })) << now.dump();
    HttpReply c = chat(port(), "user.a", {{"lemon_fake", {{"tokens", 1}}}});
    ASSERT_EQ(c.status, 200) << c.error << c.body;
    EXPECT_EQ(c.json()["usage"]["completion_tokens"], 1) << c.body;
  }
  // Every stream was still open while they were served.
  EXPECT_EQ(fake_state(url)["active"], kStreams);

  streams.clear();  // every client leaves
  nlohmann::json h;
  EXPECT_TRUE(eventually([&] {
    h = health(port());
    return loaded_field(h, "user.a", "in_flight") == 0;
  })) << h.dump();
  EXPECT_TRUE(eventually([&] {
    state = fake_state(url);
    return state["active"] == 0 && state["cancelled"] == kStreams;
  })) << state.dump();
}

}  // namespace
}  // namespace lemon::testing
