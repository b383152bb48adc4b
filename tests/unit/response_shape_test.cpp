// The route snapshot's shapes (support/response_shape.h): values become types
// except enum-like fields, volatile text is masked, arrays are summarized by
// their first element, streams by their events with repeats collapsed.
#include "support/response_shape.h"

#include <gtest/gtest.h>

namespace lemon::testing {
namespace {

using nlohmann::json;

const ShapeMasks kMasks{{{"/tmp/lemon-it123", "<tmp>"}}, {}};

TEST(ResponseShape, ValuesBecomeTypesButEnumLikeFieldsStay) {
  const json body = {{"id", "chatcmpl-42"},
                     {"object", "chat.completion"},
                     {"created", 1795761490},
                     {"ok", true},
                     {"none", nullptr},
                     {"error", {{"code", "model_not_found"}, {"param", "model"}, {"type", "x"}}}};
  EXPECT_EQ(json_shape(body, kMasks),
            (json{{"id", "string"},
                  {"object", "chat.completion"},
                  {"created", "number"},
                  {"ok", "boolean"},
                  {"none", "null"},
                  {"error", {{"code", "model_not_found"}, {"param", "model"}, {"type", "x"}}}}));
}

TEST(ResponseShape, ArraysAreTheirFirstElementsShape) {
  const json body = {{"data", {{{"a", 1}}, {{"b", "x"}}}}, {"empty", json::array()}};
  EXPECT_EQ(json_shape(body, kMasks),
            (json{{"data", json::array({{{"a", "number"}}})}, {"empty", json::array()}}));
}

TEST(ResponseShape, VolatileTextIsMaskedInKeptValuesAndKeys) {
  const json body = {{"status", "listening on 127.0.0.1:43121 in /tmp/lemon-it123/cache"},
                     {"/tmp/lemon-it123/x", 1},
                     {"4242", "pid"}};
  EXPECT_EQ(json_shape(body, kMasks),
            (json{{"status", "listening on 127.0.0.1:<port> in <tmp>/cache"},
                  {"<tmp>/x", "number"},
                  {"<number>", "string"}}));
}

TEST(ResponseShape, MachineKeysAreRecordedAsSuch) {
  ShapeMasks masks = kMasks;
  masks.machine_keys = {"devices", "cpu_percent"};
  const json body = {{"devices", {{"gpus", json::array({1})}}}, {"cpu_percent", nullptr}, {"n", 1}};
  EXPECT_EQ(json_shape(body, masks),
            (json{{"devices", "<machine>"}, {"cpu_percent", "<machine>"}, {"n", "number"}}));
}

TEST(ResponseShape, SseEventsCollapseRunsAndDropComments) {
  const std::string body =
      ": ping\n\n"
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n"
      "event: error\ndata: not json\n\n"
      "data: [DONE]\n\n";
  const json delta = {{"choices", json::array({{{"delta", {{"content", "string"}}}}})}};
  EXPECT_EQ(
      sse_shape(body, kMasks),
      json::array({{{"data", {{"choices", json::array({{{"delta", {{"role", "assistant"}}}}})}}}},
                   {{"data", delta}},
                   {{"event", "error"}, {"data", "<text>"}},
                   {{"data", "[DONE]"}}}));
}

TEST(ResponseShape, NdjsonLinesCollapseRuns) {
  const std::string body = "{\"done\":false,\"n\":1}\n{\"done\":false,\"n\":2}\n{\"done\":true}\n";
  EXPECT_EQ(ndjson_shape(body, kMasks),
            json::array({{{"done", false}, {"n", "number"}}, {{"done", true}}}));
}

TEST(ResponseShape, BodiesAreReadByTheirMediaType) {
  EXPECT_EQ(body_shape("application/json; charset=utf-8", "{\"a\":1}", kMasks),
            (json{{"a", "number"}}));
  EXPECT_EQ(body_shape("application/json", "{oops", kMasks), "<invalid json>");
  EXPECT_EQ(body_shape("text/html", "<html>", kMasks), "<text>");
  EXPECT_EQ(body_shape("image/png", "\x89PNG", kMasks), "<binary>");
  EXPECT_EQ(body_shape("application/json", "", kMasks), "<empty>");
  EXPECT_EQ(body_shape("text/plain; version=0.0.4",
                       "# HELP b x\n# TYPE b gauge\nb 1\n# TYPE a counter\na_total 2\n", kMasks),
            json::array({"a counter", "b gauge"}));
}

}  // namespace
}  // namespace lemon::testing
