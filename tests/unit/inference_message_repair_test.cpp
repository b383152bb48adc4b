// The chat repairs applied after a template rejection (issue #14 §2), each
// against a recorded request and the messages the retry sends; and the
// classification of backend error answers that triggers them.
#include "lemon/inference/message_repair.h"

#include <gtest/gtest.h>

#include "lemon/inference/backend_rejection.h"

namespace lemon::inference {
namespace {

using nlohmann::json;

const json kToolCall = {
    {"id", "call_1"}, {"type", "function"}, {"function", {{"name", "ls"}, {"arguments", "{}"}}}};

TEST(MessageRepair, ContentOfAnAssistantToolCallTurnGoesIntoItsReasoning) {
  // As gpt-oss's template refuses it ("Cannot pass both content and thinking").
  json messages = json::parse(R"([
    {"role":"user","content":"list"},
    {"role":"assistant","content":"Calling ls.","thinking":"Needs a listing.",
     "tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"call_1","content":"a.txt"}])");
  const MessageRepair r = repair_chat_messages(messages);
  EXPECT_EQ(r.merged_reasoning, 1);
  EXPECT_TRUE(r.changed());
  EXPECT_EQ(messages[1], (json{{"role", "assistant"},
                               {"thinking", "Needs a listing.\n\nCalling ls."},
                               {"tool_calls", json::array({kToolCall})}}));
  EXPECT_EQ(messages.size(), 3u);
}

TEST(MessageRepair, ReasoningContentIsUsedWhenThereIsNoThinkingAndPartsBecomeText) {
  json messages = json::parse(R"([
    {"role":"assistant","content":[{"type":"text","text":"A"},{"type":"text","text":"B"}],
     "reasoning_content":"R","tool_calls":[{"id":"call_1","type":"function",
     "function":{"name":"ls","arguments":"{}"}}]}])");
  EXPECT_EQ(repair_chat_messages(messages).merged_reasoning, 1);
  EXPECT_EQ(messages[0]["reasoning_content"], "R\n\nA\n\nB");
  EXPECT_FALSE(messages[0].contains("content"));
}

TEST(MessageRepair, AnAssistantTurnWithoutToolCallsKeepsBoth) {
  json messages = json::parse(R"([{"role":"assistant","content":"x","thinking":"y"}])");
  const json before = messages;
  EXPECT_FALSE(repair_chat_messages(messages).changed());
  EXPECT_EQ(messages, before);
}

TEST(MessageRepair, LateSystemMessagesJoinTheFirstAtTheFront) {
  json messages = json::parse(R"([
    {"role":"system","content":"One."},
    {"role":"user","content":"hi"},
    {"role":"system","content":"Two."},
    {"role":"assistant","content":"hello"}])");
  const MessageRepair r = repair_chat_messages(messages);
  EXPECT_EQ(r.moved_system, 1);
  EXPECT_EQ(messages, json::parse(R"([
    {"role":"system","content":"One.\n\nTwo."},
    {"role":"user","content":"hi"},
    {"role":"assistant","content":"hello"}])"));
}

TEST(MessageRepair, ConsecutiveTurnsOfOneRoleAreMergedButToolTurnsAreNot) {
  json messages = json::parse(R"([
    {"role":"user","content":"a"},
    {"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x"}}]},
    {"role":"assistant","content":"b"},
    {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
     "function":{"name":"ls","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"call_1","content":"r1"},
    {"role":"tool","tool_call_id":"call_2","content":"r2"},
    {"role":"user","content":"c"},
    {"role":"user","content":"d"}])");
  const MessageRepair r = repair_chat_messages(messages);
  EXPECT_EQ(r.merged_turns, 2);
  EXPECT_EQ(messages, json::parse(R"([
    {"role":"user","content":[{"type":"text","text":"a"},
                              {"type":"image_url","image_url":{"url":"data:x"}}]},
    {"role":"assistant","content":"b"},
    {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
     "function":{"name":"ls","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"call_1","content":"r1"},
    {"role":"tool","tool_call_id":"call_2","content":"r2"},
    {"role":"user","content":"c\n\nd"}])"));
}

TEST(MessageRepair, AWellFormedChatOrSomethingElseIsLeftAlone) {
  json chat = json::parse(R"([{"role":"system","content":"s"},{"role":"user","content":"u"},
                              {"role":"assistant","content":"a"},{"role":"user","content":"v"}])");
  const json before = chat;
  const MessageRepair r = repair_chat_messages(chat);
  EXPECT_FALSE(r.changed());
  EXPECT_EQ(r.describe(), "nothing changed");
  EXPECT_EQ(chat, before);
  json odd = json::parse(R"([{"role":"user","content":"u"}, 3])");
  EXPECT_FALSE(repair_chat_messages(odd).changed());
  json not_array = "text";
  EXPECT_FALSE(repair_chat_messages(not_array).changed());
}

TEST(BackendRejection, TemplateErrorsAsLlamaServerAnswersThem) {
  // Recorded: llama-server's 400 for a template's raise_exception().
  EXPECT_EQ(classify_backend_rejection(
                400, R"({"error":{"code":400,"message":"Jinja Exception: Cannot pass both )"
                     R"(content and thinking in an assistant message with tool calls!",)"
                     R"("type":"invalid_request_error"}})"),
            BackendRejection::kTemplate);
  // Older builds pass the template's text alone, some as a 500.
  EXPECT_EQ(classify_backend_rejection(
                500, R"({"error":{"code":500,"message":"After the optional system message, )"
                     R"(conversation roles must alternate user/assistant/user/assistant/...",)"
                     R"("type":"server_error"}})"),
            BackendRejection::kTemplate);
  EXPECT_EQ(classify_backend_rejection(
                400, R"({"error":{"message":"System message must be at the beginning."}})"),
            BackendRejection::kTemplate);
}

TEST(BackendRejection, OtherAnswersAreNotTemplateErrors) {
  EXPECT_EQ(classify_backend_rejection(
                400, R"({"error":{"code":400,"message":"the request exceeds the available )"
                     R"(context size","type":"exceed_context_size_error"}})"),
            BackendRejection::kOther);
  EXPECT_EQ(classify_backend_rejection(500, "boom"), BackendRejection::kOther);
  // The right words under another status are not a template refusal.
  EXPECT_EQ(classify_backend_rejection(503, R"({"error":{"message":"Jinja Exception: x"}})"),
            BackendRejection::kOther);
}

}  // namespace
}  // namespace lemon::inference
