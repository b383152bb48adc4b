// How a routed answer shows its decision (inference/route_stamp.h): the
// header on every successful answer, the decision object first in a whole
// JSON answer and in a stream's first JSON event, errors untouched.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lemon/inference/route_stamp.h"

namespace lemon::inference {
namespace {

using nlohmann::json;

// Keeps what reaches the client.
class ClientWriter final : public net::ResponseWriter {
 public:
  bool send(int s, const net::Headers& h, std::string_view b) override {
    status = s;
    headers = h;
    body.assign(b);
    sent = true;
    return true;
  }
  bool begin_chunked(int s, const net::Headers& h) override {
    status = s;
    headers = h;
    sent = true;
    return true;
  }
  bool write_chunk(std::string_view data) override {
    chunks.emplace_back(data);
    body.append(data);
    return true;
  }
  bool finish() override {
    finished = true;
    return true;
  }
  bool headers_sent() const override { return sent; }
  bool client_connected() override { return true; }
  int client_fd() const override { return -1; }

  int status = 0;
  net::Headers headers;
  std::string body;
  std::vector<std::string> chunks;
  bool sent = false;
  bool finished = false;
};

const json kDecision = {{"route_to", "user.big"}, {"matched_rule", "code"}};

TEST(RouteStamp, AWholeAnswerGetsTheObjectFirstAndStaysValidJson) {
  auto stamped =
      stamp_answer(R"( {"id": "x", "choices": [{"text": "{not a key}"}]} )", kDecision.dump());
  ASSERT_TRUE(stamped);
  const json j = json::parse(*stamped);
  EXPECT_EQ(j["x_lemonade_route"], kDecision);
  EXPECT_EQ(j["id"], "x");
  EXPECT_EQ(j["choices"][0]["text"], "{not a key}");
  EXPECT_EQ(json::parse(*stamp_answer("{ }", kDecision.dump())),
            (json{{"x_lemonade_route", kDecision}}));
}

TEST(RouteStamp, WhatIsNotAnObjectIsLeftAlone) {
  for (const char* body : {"", "   ", "[1, 2]", "\"text\"", "{", "}", "42"}) {
    EXPECT_FALSE(stamp_answer(body, kDecision.dump())) << body;
  }
}

TEST(RouteStamp, TheWriterStampsSuccessAndPassesErrorsUnchanged) {
  ClientWriter client;
  RouteStampWriter w(client, "code", kDecision);
  ASSERT_TRUE(w.send(200, net::Headers{{"Content-Type", "application/json"}}, R"({"a":1})"));
  EXPECT_EQ(client.headers.get(kRouteHeader).value_or(""), "code");
  EXPECT_EQ(json::parse(client.body)["x_lemonade_route"], kDecision);

  ClientWriter failed;
  RouteStampWriter e(failed, "code", kDecision);
  const std::string error = R"({"error":{"message":"no"}})";
  ASSERT_TRUE(e.send(500, net::Headers{}, error));
  EXPECT_EQ(failed.body, error);
  EXPECT_FALSE(failed.headers.has(kRouteHeader));
}

TEST(RouteStamp, AStreamsFirstJsonEventCarriesTheObjectEvenWhenSplit) {
  ClientWriter client;
  RouteStampWriter w(client, "default", kDecision);
  ASSERT_TRUE(w.begin_chunked(200, net::Headers{{"Content-Type", "text/event-stream"}}));
  EXPECT_EQ(client.headers.get(kRouteHeader).value_or(""), "default");
  // A comment event first, then a JSON event split across two chunks.
  ASSERT_TRUE(w.write_chunk(": loading\n\ndata: {\"choices\":"));
  ASSERT_TRUE(w.write_chunk("[]}\n\ndata: {\"n\":2}\n\ndata: [DONE]\n\n"));
  ASSERT_TRUE(w.finish());
  EXPECT_TRUE(client.finished);
  const std::string expected = ": loading\n\ndata: {\"x_lemonade_route\":" + kDecision.dump() +
                               ",\"choices\":[]}\n\ndata: {\"n\":2}\n\ndata: [DONE]\n\n";
  EXPECT_EQ(client.body, expected);
}

TEST(RouteStamp, AStreamThatEndsInAnErrorEventIsNotStamped) {
  // A load that failed after the keepalives: its error is the stream's
  // first JSON event, and stays as it is.
  ClientWriter client;
  RouteStampWriter w(client, "default", kDecision);
  ASSERT_TRUE(w.begin_chunked(200, net::Headers{}));
  const std::string stream =
      ": loading\n\ndata: {\"error\":{\"message\":\"no\"}}\n\ndata: {\"n\":1}\n\n";
  ASSERT_TRUE(w.write_chunk(stream));
  ASSERT_TRUE(w.finish());
  EXPECT_EQ(client.body, stream);
}

TEST(RouteStamp, AnAnswerNotValidUtf8StillGetsItsObject) {
  json decision = kDecision;
  decision["trace"] = {{{"condition", "classifier:x"}, {"error", std::string("cut \xC3")}}};
  ClientWriter client;
  RouteStampWriter w(client, "default", decision);
  ASSERT_TRUE(w.send(200, net::Headers{}, R"({"a":1})"));
  EXPECT_TRUE(json::parse(client.body)["x_lemonade_route"].is_object()) << client.body;
}

TEST(RouteStamp, WithoutADecisionOnlyTheHeaderIsAdded) {
  ClientWriter client;
  RouteStampWriter w(client, "default", json());
  ASSERT_TRUE(w.send(200, net::Headers{}, R"({"a":1})"));
  EXPECT_EQ(client.body, R"({"a":1})");
  EXPECT_EQ(client.headers.get(kRouteHeader).value_or(""), "default");
}

}  // namespace
}  // namespace lemon::inference
