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
std::vector<SseEvent> read_stream(SseStream& s, bool with_comments = false) {
  EXPECT_TRUE(s.read_head());
  EXPECT_EQ(s.status(), 200);
  EXPECT_NE(s.header("content-type").find("text/event-stream"), std::string::npos);
  return with_comments ? s.rest_with_comments() : s.rest();
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

  // The fake holds each token after the first until the test has read the
  // one before (a gate, tests/fakes/README.md): a router that held a chunk
  // back until the next was written would never deliver it.
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  nlohmann::json body = stream_body("user.a", 5, 0);
  body["lemon_fake"]["gate"] = "tokens";
  SseStream s(port(), "/api/v1/chat/completions", body.dump());
  ASSERT_TRUE(s.read_head());
  std::vector<SseEvent> events;
  for (int i = 0; i < 5; ++i) {
    auto e = s.next_data();
    ASSERT_TRUE(e.has_value()) << "token " << i << " never arrived while the next was held";
    events.push_back(*e);
    if (i < 4) {
      release_fake_gates(url);
    }
  }
  for (auto& e : s.rest()) {
    events.push_back(std::move(e));
  }
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
  // And each was read before the fake wrote the next.
  for (int i = 0; i + 1 < 5; ++i) {
    EXPECT_LT(events[i].arrival_ns, chunks[i + 1]["fake_ts_ns"].get<std::int64_t>()) << i;
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

  // A stream on a, held after its first token; meanwhile a short
  // non-streaming request on b.
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  nlohmann::json body = stream_body("user.a", 5, 0);
  body["lemon_fake"]["gate"] = "tokens";
  SseStream s(port(), "/api/v1/chat/completions", body.dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_TRUE(s.next().has_value());
  HttpReply r = chat(port(), "user.b", {{"max_tokens", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json stats = stats_of(port(), "user.b");
  EXPECT_EQ(stats["output_tokens"], 3);

  for (int i = 1; i < 5; ++i) {
    release_fake_gates(url);
    ASSERT_TRUE(s.next().has_value()) << "token " << i;
  }
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
  auto events = read_stream(s, /*with_comments=*/true);
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
