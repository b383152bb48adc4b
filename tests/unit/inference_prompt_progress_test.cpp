// llama-server's prompt progress (issue #26): finding it in an event, asking
// for it in a client's body without touching the rest, stripping it from a
// stream whole event by whole event, and the scanner not taking it for the
// first token.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "lemon/inference/prompt_progress.h"
#include "lemon/inference/sse_scanner.h"

namespace lemon::inference {
namespace {

// The chunk llama-server sends (tools/server/server-task.cpp).
const std::string kProgress =
    R"(data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],)"
    R"("created":1,"id":"chatcmpl-1","model":"m","object":"chat.completion.chunk",)"
    R"("prompt_progress":{"total":5000,"cache":100,"processed":2048,"time_ms":1534.5}})"
    "\n\n";
const std::string kToken =
    R"(data: {"choices":[{"index":0,"delta":{"content":"Hi"}}],"object":"chat.completion.chunk"})"
    "\n\n";
// A token whose text names the key: inside a JSON string its quotes are escaped.
const std::string kTokenNamingTheKey =
    R"(data: {"choices":[{"index":0,"delta":{"content":"\"prompt_progress\":{}"}}]})"
    "\n\n";

TEST(PromptProgressTest, ReadsLlamaServersProgressChunk) {
  auto p = prompt_progress_in(kProgress);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->total, 5000);
  EXPECT_EQ(p->cache, 100);
  EXPECT_EQ(p->processed, 2048);
  EXPECT_DOUBLE_EQ(p->time_ms, 1534.5);
  EXPECT_FALSE(prompt_progress_in(kToken).has_value());
  EXPECT_FALSE(prompt_progress_in(kTokenNamingTheKey).has_value());
  EXPECT_FALSE(prompt_progress_in(": ping\n\n").has_value());
}

TEST(PromptProgressTest, AsksForProgressKeepingTheClientsBytes) {
  const std::string body =
      R"({"model":"m", "stream":true,"messages":[{"role":"user","content":"}"}]} )";
  auto asked = with_return_progress(body);
  ASSERT_TRUE(asked.has_value());
  auto j = nlohmann::json::parse(*asked);
  EXPECT_EQ(j["return_progress"], true);
  EXPECT_EQ(j["messages"][0]["content"], "}");
  EXPECT_EQ(asked->substr(0, body.size() - 2), body.substr(0, body.size() - 2));
  EXPECT_EQ(nlohmann::json::parse(*with_return_progress("{}")),
            nlohmann::json({{"return_progress", true}}));
  EXPECT_EQ(nlohmann::json::parse(*with_return_progress(" { } ")),
            nlohmann::json({{"return_progress", true}}));
  // Already there (asked or refused by the client), or not an object.
  EXPECT_FALSE(with_return_progress(R"({"return_progress":false})").has_value());
  EXPECT_FALSE(with_return_progress("[1]").has_value());
  EXPECT_FALSE(with_return_progress("").has_value());
}

TEST(PromptProgressTest, StripperDropsProgressEventsAndKeepsTheRestInOrder) {
  ProgressStripper s;
  // The usual piece: one whole token event, passed through as it is.
  std::string_view out = s.feed(kToken);
  EXPECT_EQ(out, kToken);
  EXPECT_EQ(out.data(), kToken.data()) << "an ordinary event is not copied";
  EXPECT_EQ(s.feed(kProgress), "");
  EXPECT_EQ(std::string(s.feed(kProgress + kToken + ": ping\n\n")), kToken + ": ping\n\n");
  EXPECT_EQ(std::string(s.feed(kTokenNamingTheKey)), kTokenNamingTheKey);
  EXPECT_FALSE(s.holding());
}

TEST(PromptProgressTest, StripperHoldsAnEventSplitAcrossPieces) {
  ProgressStripper s;
  // A progress event cut in the middle of its key, then a token cut too.
  const std::string stream = kProgress + kToken + kProgress + "data: [DONE]\n\n";
  std::string forwarded;
  for (std::size_t at = 0; at < stream.size(); at += 7) {
    forwarded += std::string(s.feed(std::string_view(stream).substr(at, 7)));
  }
  EXPECT_FALSE(s.holding());
  EXPECT_EQ(forwarded, kToken + "data: [DONE]\n\n");
}

TEST(PromptProgressTest, TheScannerDoesNotTakeProgressForTheFirstToken) {
  const auto start = SseScanner::Clock::now();
  SseScanner scanner(start);
  scanner.feed(kProgress, start + std::chrono::seconds(1));
  scanner.feed(kProgress, start + std::chrono::seconds(2));
  EXPECT_EQ(scanner.data_events(), 0u);
  EXPECT_FALSE(scanner.first_event_latency().has_value());
  EXPECT_EQ(scanner.progress_reports(), 2u);
  ASSERT_TRUE(scanner.progress().has_value());
  EXPECT_EQ(scanner.progress()->processed, 2048);
  scanner.feed(kToken, start + std::chrono::seconds(3));
  EXPECT_EQ(scanner.data_events(), 1u);
  EXPECT_DOUBLE_EQ(*scanner.first_event_latency(), 3.0);
}

}  // namespace
}  // namespace lemon::inference
