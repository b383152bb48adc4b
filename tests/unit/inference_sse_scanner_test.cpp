// SseScanner (event boundaries, [DONE], the last usage/timings event, token
// timing, bounded memory), sse_event_data, and the backend-error rewriting
// used on SSE streams and error bodies.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "lemon/inference/sse_scanner.h"

namespace lemon::inference {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = SseScanner::Clock;

const Clock::time_point kScanT0 = Clock::time_point(1000s);

std::string event(const json& j) {
  return "data: " + j.dump() + "\n\n";
}

std::string sse_chunk(const std::string& text) {
  return event({{"object", "chat.completion.chunk"},
                {"choices", json::array({{{"delta", {{"content", text}}}}})}});
}

// ---- sse_event_data ------------------------------------------------------------------

TEST(HttpApiSseEventData, JoinsDataLinesAndSkipsOthers) {
  EXPECT_EQ(sse_event_data("data: abc\n\n"), "abc");
  EXPECT_EQ(sse_event_data("data:abc\n\n"), "abc");
  EXPECT_EQ(sse_event_data("event: x\ndata: a\ndata: b\nid: 3\n\n"), "a\nb");
  EXPECT_EQ(sse_event_data("data: a\r\ndata: b\r\n\r\n"), "a\nb");
  EXPECT_EQ(sse_event_data(": keepalive\n\n"), std::nullopt);
  EXPECT_EQ(sse_event_data("event: ping\n\n"), std::nullopt);
  EXPECT_EQ(sse_event_data("data: \n\n"), "");
}

// ---- boundaries --------------------------------------------------------------------------

TEST(HttpApiSseScanner, CountsDataEventsAndDone) {
  SseScanner s(kScanT0);
  std::string stream = sse_chunk("a") + sse_chunk("b") + sse_chunk("c") + "data: [DONE]\n\n";
  s.feed(stream, kScanT0 + 1s);
  EXPECT_EQ(s.data_events(), 3u);  // [DONE] is not a data event
  EXPECT_TRUE(s.saw_done());
  EXPECT_TRUE(s.at_boundary());
}

TEST(HttpApiSseScanner, BoundariesSplitAcrossFeedsAtEveryByte) {
  const std::string stream =
      sse_chunk("a") + ": keepalive\n\n" + sse_chunk("b") + "data: [DONE]\n\n";
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    SseScanner s(kScanT0);
    s.feed(std::string_view(stream).substr(0, cut), kScanT0 + 1s);
    s.feed(std::string_view(stream).substr(cut), kScanT0 + 2s);
    EXPECT_EQ(s.data_events(), 2u) << "cut at " << cut;
    EXPECT_TRUE(s.saw_done()) << "cut at " << cut;
    EXPECT_TRUE(s.at_boundary()) << "cut at " << cut;
  }
}

TEST(HttpApiSseScanner, ByteByByteFeeding) {
  const std::string stream = sse_chunk("a") + sse_chunk("b") + sse_chunk("c") + "data: [DONE]\n\n";
  SseScanner s(kScanT0);
  for (char c : stream) {
    s.feed(std::string_view(&c, 1), kScanT0 + 1s);
  }
  EXPECT_EQ(s.data_events(), 3u);
  EXPECT_TRUE(s.saw_done());
  EXPECT_TRUE(s.at_boundary());
}

TEST(HttpApiSseScanner, AtBoundaryOnlyBetweenEvents) {
  SseScanner s(kScanT0);
  EXPECT_TRUE(s.at_boundary());
  s.feed("data: {\"a\":", kScanT0);
  EXPECT_FALSE(s.at_boundary());
  EXPECT_EQ(s.data_events(), 0u);
  s.feed("1}\n", kScanT0);
  EXPECT_FALSE(s.at_boundary());
  EXPECT_EQ(s.data_events(), 0u);
  s.feed("\n", kScanT0);
  EXPECT_TRUE(s.at_boundary());
  EXPECT_EQ(s.data_events(), 1u);
}

TEST(HttpApiSseScanner, CrLfBoundaries) {
  SseScanner s(kScanT0);
  s.feed("data: {\"n\":1}\r\n\r\ndata: {\"n\":2}\r\n", kScanT0);
  EXPECT_EQ(s.data_events(), 1u);
  EXPECT_FALSE(s.at_boundary());
  s.feed("\r\ndata: [DONE]\r\n\r\n", kScanT0);
  EXPECT_EQ(s.data_events(), 2u);
  EXPECT_TRUE(s.saw_done());
  EXPECT_TRUE(s.at_boundary());
}

TEST(HttpApiSseScanner, CommentsAndEventOnlyBlocksAreNotDataEvents) {
  SseScanner s(kScanT0);
  s.feed(": keepalive\n\n: another\n\nevent: ping\n\n", kScanT0 + 1s);
  EXPECT_EQ(s.data_events(), 0u);
  EXPECT_EQ(s.first_event_latency(), std::nullopt);
  EXPECT_FALSE(s.saw_done());
  EXPECT_TRUE(s.at_boundary());
}

TEST(HttpApiSseScanner, NoDoneWhenStreamEndsWithout) {
  SseScanner s(kScanT0);
  s.feed(sse_chunk("a"), kScanT0);
  EXPECT_FALSE(s.saw_done());
}

// ---- usage / timings -----------------------------------------------------------------------

TEST(HttpApiSseScanner, KeepsTheLastUsageOrTimingsEvent) {
  SseScanner s(kScanT0);
  EXPECT_EQ(s.last_usage(), std::nullopt);
  s.feed(event({{"usage", {{"prompt_tokens", 1}, {"completion_tokens", 1}}}}), kScanT0);
  s.feed(sse_chunk("x"), kScanT0);
  s.feed(event({{"choices", json::array()},
                {"timings", {{"prompt_n", 7}, {"predicted_n", 9}, {"prompt_ms", 12.5}}}}),
         kScanT0);
  s.feed(sse_chunk("y"), kScanT0);  // no usage: does not replace
  s.feed("data: [DONE]\n\n", kScanT0);
  auto usage = s.last_usage();
  ASSERT_TRUE(usage.has_value());
  ASSERT_TRUE(usage->contains("timings"));
  EXPECT_EQ((*usage)["timings"]["prompt_n"], 7);
  EXPECT_EQ((*usage)["timings"]["predicted_n"], 9);
  EXPECT_FALSE(usage->contains("usage"));
}

TEST(HttpApiSseScanner, UsageEventSplitAcrossFeedsIsParsed) {
  SseScanner s(kScanT0);
  std::string e = event({{"usage", {{"prompt_tokens", 3}, {"completion_tokens", 4}}}});
  s.feed(e.substr(0, 10), kScanT0);
  s.feed(e.substr(10), kScanT0);
  auto usage = s.last_usage();
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ((*usage)["usage"]["completion_tokens"], 4);
}

TEST(HttpApiSseScanner, UnparsableUsageEventGivesNothing) {
  SseScanner s(kScanT0);
  s.feed("data: {\"usage\": {broken\n\n", kScanT0);
  EXPECT_EQ(s.last_usage(), std::nullopt);
}

// ---- timing --------------------------------------------------------------------------------

TEST(HttpApiSseScanner, LatencyGapsAndGenerationTime) {
  SseScanner s(kScanT0);
  s.feed(": keepalive\n\n", kScanT0 + 100ms);  // not a token
  s.feed(sse_chunk("a"), kScanT0 + 250ms);
  s.feed(sse_chunk("b"), kScanT0 + 260ms);
  s.feed(sse_chunk("c") + sse_chunk("d"), kScanT0 + 290ms);
  s.feed("data: [DONE]\n\n", kScanT0 + 900ms);  // not a token either
  ASSERT_TRUE(s.first_event_latency().has_value());
  EXPECT_NEAR(*s.first_event_latency(), 0.250, 1e-9);
  ASSERT_EQ(s.gaps().size(), 3u);  // data_events - 1
  EXPECT_NEAR(s.gaps()[0], 0.010, 1e-9);
  EXPECT_NEAR(s.gaps()[1], 0.030, 1e-9);
  EXPECT_NEAR(s.gaps()[2], 0.0, 1e-9);  // two events in one read
  EXPECT_NEAR(s.generation_seconds(), 0.040, 1e-9);
}

TEST(HttpApiSseScanner, NoEventsNoTiming) {
  SseScanner s(kScanT0);
  EXPECT_EQ(s.first_event_latency(), std::nullopt);
  EXPECT_TRUE(s.gaps().empty());
  EXPECT_EQ(s.generation_seconds(), 0.0);
}

TEST(HttpApiSseScanner, GapsAreCapped) {
  SseScanner s(kScanT0, /*max_gaps=*/2);
  for (int i = 0; i < 6; ++i) {
    s.feed(sse_chunk("t"), kScanT0 + std::chrono::milliseconds(10 * i));
  }
  EXPECT_EQ(s.data_events(), 6u);
  EXPECT_EQ(s.gaps().size(), 2u);
  EXPECT_NEAR(s.generation_seconds(), 0.050, 1e-9);  // still the whole span
}

// ---- oversized events ----------------------------------------------------------------------

TEST(HttpApiSseScanner, HugeEventIsSkippedAndScanningResumes) {
  SseScanner s(kScanT0);
  s.feed(sse_chunk("before"), kScanT0);
  // A 3 MiB event delivered in 64 KiB pieces, its boundary in a later feed.
  std::string huge =
      "data: {\"usage\":{\"prompt_tokens\":999},\"pad\":\"" + std::string(3u << 20, 'x') + "\"}";
  for (std::size_t i = 0; i < huge.size(); i += 64u << 10) {
    s.feed(std::string_view(huge).substr(i, 64u << 10), kScanT0);
  }
  EXPECT_FALSE(s.at_boundary());
  s.feed("\n\n" + event({{"usage", {{"prompt_tokens", 5}}}}) + "data: [DONE]\n\n", kScanT0);
  EXPECT_TRUE(s.at_boundary());
  EXPECT_TRUE(s.saw_done());
  EXPECT_EQ(s.data_events(), 2u);  // "before" and the usage event; the huge one is skipped
  auto usage = s.last_usage();
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ((*usage)["usage"]["prompt_tokens"], 5);
}

// The same, but the huge event's blank line is split between two reads: the
// first '\n' arrives with the oversized data and the second with the next
// event. The event after the huge one must still be seen.
TEST(HttpApiSseScanner, HugeEventWithSplitBoundaryDoesNotSwallowTheNextEvent) {
  SseScanner s(kScanT0);
  std::string huge = "data: {\"pad\":\"" + std::string(2u << 20, 'x') + "\"}\n";
  s.feed(huge, kScanT0);
  s.feed("\n" + event({{"usage", {{"prompt_tokens", 5}}}}) + "data: [DONE]\n\n", kScanT0);
  EXPECT_TRUE(s.saw_done());
  EXPECT_EQ(s.data_events(), 1u) << "the usage event after the oversized one was lost";
  auto usage = s.last_usage();
  ASSERT_TRUE(usage.has_value()) << "the usage event after the oversized one was lost";
  EXPECT_EQ((*usage)["usage"]["prompt_tokens"], 5);
}

TEST(HttpApiSseScanner, HugeEventInOneFeedWithItsBoundaryIsStillScanned) {
  SseScanner s(kScanT0);
  std::string huge = "data: {\"pad\":\"" + std::string(2u << 20, 'x') + "\"}\n\n";
  s.feed(huge + sse_chunk("after"), kScanT0);
  EXPECT_EQ(s.data_events(), 2u);
  EXPECT_TRUE(s.at_boundary());
}

// ---- normalize_sse_error_events ------------------------------------------------------------

constexpr StreamFraming kChat = StreamFraming::kChatCompletions;

TEST(HttpApiSseErrors, RewritesAWholeLlamaErrorEvent) {
  const std::string in =
      "data: {\"error\":{\"code\":500,\"message\":\"context size exceeded\","
      "\"type\":\"exceed_context_size_error\"}}\n\n";
  auto out = normalize_sse_error_events(in, kChat);
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->rfind("data: ", 0), 0u) << *out;
  ASSERT_GE(out->size(), 2u);
  EXPECT_EQ(out->substr(out->size() - 2), "\n\n");
  auto data = sse_event_data(*out);
  ASSERT_TRUE(data.has_value());
  json j = json::parse(*data);
  ASSERT_TRUE(j.contains("error"));
  const json& e = j["error"];
  EXPECT_EQ(e.size(), 4u) << e.dump();
  EXPECT_EQ(e["message"], "context size exceeded");
  EXPECT_EQ(e["type"], "exceed_context_size_error");
  EXPECT_EQ(e["code"], "exceed_context_size_error");
  EXPECT_TRUE(e["param"].is_null());
}

TEST(HttpApiSseErrors, ARewrittenErrorOfAResponsesStreamIsThatApisErrorEvent) {
  const std::string normal = "event: response.output_text.delta\ndata: {\"delta\":\"hi\"}\n\n";
  const std::string err =
      "data: {\"error\":{\"code\":500,\"message\":\"context size exceeded\","
      "\"type\":\"exceed_context_size_error\"}}\n\n";
  auto out = normalize_sse_error_events(normal + err, StreamFraming::kResponses);
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->rfind(normal, 0), 0u) << *out;
  const std::string event = out->substr(normal.size());
  ASSERT_EQ(event.rfind("event: error\n", 0), 0u) << event;
  auto data = sse_event_data(event);
  ASSERT_TRUE(data.has_value());
  json j = json::parse(*data);
  EXPECT_EQ(j.size(), 4u) << j.dump();
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["code"], "exceed_context_size_error");
  EXPECT_EQ(j["message"], "context size exceeded");
  EXPECT_TRUE(j["param"].is_null());
  EXPECT_EQ(out->find("\"error\":{"), std::string::npos) << "no chat-style envelope: " << *out;
}

TEST(HttpApiSseErrors, LeavesOtherEventsOfTheChunkAlone) {
  const std::string normal = sse_chunk("hi");
  const std::string err = "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n";
  auto out = normalize_sse_error_events(normal + err + ": comment\n\n", kChat);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->rfind(normal, 0), 0u) << *out;  // unchanged and first
  EXPECT_NE(out->find(": comment\n\n"), std::string::npos);
  EXPECT_NE(out->find("\"boom\""), std::string::npos);
  EXPECT_NE(out->find("\"param\":null"), std::string::npos);
}

TEST(HttpApiSseErrors, PartialChunkIsLeftAlone) {
  EXPECT_EQ(normalize_sse_error_events("data: {\"error\":{\"message\":\"boom\"}}\n", kChat),
            std::nullopt);
  EXPECT_EQ(normalize_sse_error_events("data: {\"error\":{\"mess", kChat), std::nullopt);
  // A whole error event followed by the start of the next one.
  EXPECT_EQ(normalize_sse_error_events("data: {\"error\":\"x\"}\n\ndata: {\"a\"", kChat),
            std::nullopt);
}

TEST(HttpApiSseErrors, NonErrorChunksAreLeftAlone) {
  EXPECT_EQ(normalize_sse_error_events(sse_chunk("hello"), kChat), std::nullopt);
  EXPECT_EQ(normalize_sse_error_events("data: [DONE]\n\n", kChat), std::nullopt);
  // The word "error" in generated text is not an error event.
  EXPECT_EQ(normalize_sse_error_events(sse_chunk("\"error\": nothing"), kChat), std::nullopt);
  EXPECT_EQ(normalize_sse_error_events("", kChat), std::nullopt);
}

// ---- normalize_backend_error ----------------------------------------------------------------

void expect_envelope(const json& j) {
  ASSERT_TRUE(j.is_object()) << j.dump();
  ASSERT_EQ(j.size(), 1u) << j.dump();
  ASSERT_TRUE(j.contains("error")) << j.dump();
  const json& e = j["error"];
  ASSERT_EQ(e.size(), 4u) << e.dump();
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e["code"].is_string());
  EXPECT_TRUE(e["param"].is_null() || e["param"].is_string());
}

TEST(HttpApiBackendError, LlamaCppObject) {
  json j = normalize_backend_error(
      R"({"error":{"code":400,"message":"bad input","type":"invalid_request_error"}})", 400);
  expect_envelope(j);
  EXPECT_EQ(j["error"]["message"], "bad input");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], "invalid_request_error");
  EXPECT_TRUE(j["error"]["param"].is_null());
}

TEST(HttpApiBackendError, OpenAiStyleObjectKeepsStringCodeAndParam) {
  json j = normalize_backend_error(
      R"({"error":{"message":"m","type":"invalid_request_error","code":"bad_thing","param":"model"}})",
      422);
  expect_envelope(j);
  EXPECT_EQ(j["error"]["code"], "bad_thing");
  EXPECT_EQ(j["error"]["param"], "model");
}

TEST(HttpApiBackendError, StringError) {
  json j = normalize_backend_error(R"({"error":"no 'file' field in the request"})", 400);
  expect_envelope(j);
  EXPECT_EQ(j["error"]["message"], "no 'file' field in the request");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], "backend_error");
}

TEST(HttpApiBackendError, PlainText) {
  json j = normalize_backend_error("Internal Server Error", 500);
  expect_envelope(j);
  EXPECT_EQ(j["error"]["message"], "Internal Server Error");
  EXPECT_EQ(j["error"]["type"], "server_error");
  EXPECT_EQ(j["error"]["code"], "backend_error");
}

TEST(HttpApiBackendError, TopLevelMessage) {
  json j = normalize_backend_error(R"({"message":"Model is loading"})", 503);
  expect_envelope(j);
  EXPECT_EQ(j["error"]["message"], "Model is loading");
  EXPECT_EQ(j["error"]["type"], "server_error");
}

TEST(HttpApiBackendError, EmptyBodyNamesTheStatus) {
  json j = normalize_backend_error("", 502);
  expect_envelope(j);
  EXPECT_EQ(j["error"]["message"], "backend answered HTTP 502");
  EXPECT_EQ(j["error"]["type"], "server_error");
}

TEST(HttpApiBackendError, ErrorObjectWithoutMessageIsDumped) {
  json j = normalize_backend_error(R"({"error":{"code":7}})", 500);
  expect_envelope(j);
  EXPECT_NE(j["error"]["message"].get<std::string>().find("7"), std::string::npos);
}

}  // namespace
}  // namespace lemon::inference
