// Many open streams (issue #3): with 256 streaming requests open on one model
// (under the default --max-connections), /health and a new short chat request
// to the same model still answer quickly, and closing the streams brings the
// in-flight count back to 0.
#include <algorithm>
#include <memory>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using Clock = std::chrono::steady_clock;
using ManyStreamsTest = RouterTest;

constexpr int kStreams = 256;
constexpr int kSamples = 10;
constexpr std::chrono::milliseconds kFast{50};

long long millis_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

TEST_F(ManyStreamsTest, HealthAndANewRequestStayFastWith256OpenStreams) {
  env_.add_llm("a");
  // Default --max-connections; enough llama.cpp slots that no request waits.
  ASSERT_NO_FATAL_FAILURE(start_router({"--parallel", std::to_string(kStreams + 1)}));
  load_ok("user.a");
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

  long long health_max = 0;
  long long chat_max = 0;
  std::string samples;  // every measurement, for the failure message
  for (int i = 0; i < kSamples; ++i) {
    auto start = Clock::now();
    HttpReply h = http_get(port(), "/api/v1/health");
    const long long health_ms = millis_since(start);
    health_max = std::max(health_max, health_ms);
    ASSERT_EQ(h.status, 200) << h.error << h.body;

    start = Clock::now();
    HttpReply c = chat(port(), "user.a", {{"lemon_fake", {{"tokens", 1}}}});
    const long long chat_ms = millis_since(start);
    chat_max = std::max(chat_max, chat_ms);
    samples += " " + std::to_string(health_ms) + "/" + std::to_string(chat_ms);
    ASSERT_EQ(c.status, 200) << c.error << c.body;
    EXPECT_EQ(c.json()["usage"]["completion_tokens"], 1) << c.body;
  }
  RecordProperty("health_max_ms", static_cast<int>(health_max));
  RecordProperty("chat_max_ms", static_cast<int>(chat_max));
  RecordProperty("samples", samples);
  EXPECT_LT(health_max, kFast.count())
      << "the slowest of " << kSamples << " GET /health took " << health_max << " ms with "
      << kStreams << " streams open (health/chat ms:" << samples << ")";
  EXPECT_LT(chat_max, kFast.count())
      << "the slowest of " << kSamples << " chat requests took " << chat_max << " ms with "
      << kStreams << " streams open (health/chat ms:" << samples << ")";
  // Every stream was still open during the measurement.
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
