// Streaming pass-through (issue #2 §7.6 and §7.14): every chunk reaches the
// client before the backend writes the next one, the stream ends with
// [DONE], /stats describes the request that finished last, and a client
// waiting for its model to load is kept informed with ": loading" comments.
#include <thread>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using StreamingTest = RouterTest;

// Reads a whole stream; fails the test unless it is 200 text/event-stream.
std::vector<SseEvent> read_stream(SseStream& s) {
  EXPECT_TRUE(s.read_head());
  EXPECT_EQ(s.status(), 200);
  EXPECT_NE(s.header("content-type").find("text/event-stream"), std::string::npos);
  return s.rest();
}

// /stats once it describes a request to `model` (it is recorded just after the
// response's last byte is written); fails the test if it never does.
nlohmann::json stats_of(int port, const std::string& model) {
  nlohmann::json stats;
  EXPECT_TRUE(eventually([&] {
    stats = http_get(port, "/api/v1/stats").json();
    return stats.is_object() && stats["model"] == model;
  })) << stats.dump();
  return stats;
}

TEST_F(StreamingTest, EachChunkArrivesBeforeTheBackendWritesTheNext) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a").status, 200);

  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 5, 150).dump());
  auto events = read_stream(s);
  EXPECT_TRUE(s.ended_cleanly());
  ASSERT_EQ(events.size(), 7u) << "5 tokens, the final chunk and [DONE]";
  EXPECT_TRUE(events.back().is_done());
  std::vector<nlohmann::json> chunks;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    chunks.push_back(nlohmann::json::parse(events[i].data, nullptr, false));
    ASSERT_TRUE(chunks.back().is_object()) << events[i].data;
    ASSERT_TRUE(chunks.back()["fake_ts_ns"].is_number_integer()) << events[i].data;
  }
  std::string text;
  for (int i = 0; i < 5; ++i) {
    text += chunks[i]["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, "The quick brown fox jumps");
  EXPECT_EQ(chunks[5]["choices"][0]["finish_reason"], "stop");
  // Token i reached us before the fake even wrote token i+1 (150 ms later).
  for (int i = 0; i + 1 < 5; ++i) {
    EXPECT_LT(events[i].arrival_ns, chunks[i + 1]["fake_ts_ns"].get<std::int64_t>())
        << "chunk " << i << " was held back until chunk " << i + 1 << " was written";
  }
}

TEST_F(StreamingTest, StatsDescribeTheStreamedRequest) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 5, 10).dump());
  auto events = read_stream(s);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().is_done());
  nlohmann::json stats = stats_of(port(), "user.a");
  EXPECT_EQ(stats["output_tokens"], 5);
  EXPECT_GT(stats["input_tokens"].get<int>(), 0);
  EXPECT_GT(stats["tokens_per_second"].get<double>(), 0.0);
}

TEST_F(StreamingTest, StatsFollowTheRequestThatFinishedLast) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  ASSERT_EQ(load(port(), "user.b").status, 200);

  // A slow stream on a; meanwhile a short non-streaming request on b.
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 5, 100).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());
  HttpReply r = chat(port(), "user.b", {{"max_tokens", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json stats = stats_of(port(), "user.b");
  EXPECT_EQ(stats["output_tokens"], 3);

  auto rest = s.rest();
  ASSERT_FALSE(rest.empty());
  EXPECT_TRUE(rest.back().is_done());
  stats = stats_of(port(), "user.a");
  EXPECT_EQ(stats["output_tokens"], 5);
}

TEST_F(StreamingTest, AClientWaitingForALoadGetsLoadingComments) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"startup_delay_ms", 2500}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 3, 0).dump());
  auto events = read_stream(s);
  EXPECT_TRUE(s.ended_cleanly());
  ASSERT_GE(events.size(), 6u) << "a comment, 3 tokens, the final chunk and [DONE]";
  ASSERT_TRUE(events.front().is_comment()) << events.front().data;
  EXPECT_EQ(events.front().comments.front(), "loading");
  std::size_t first_data = 0;
  while (first_data < events.size() && events[first_data].is_comment()) {
    EXPECT_EQ(events[first_data].comments.front(), "loading");
    ++first_data;
  }
  ASSERT_EQ(events.size() - first_data, 5u);
  auto first = nlohmann::json::parse(events[first_data].data, nullptr, false);
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "The");
  EXPECT_TRUE(events.back().is_done());
}

}  // namespace
}  // namespace lemon::testing
