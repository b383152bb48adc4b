// How classifiers ask their models and read the answers
// (routing/classifier_protocol.h): the llm contract and its strict reply,
// label scores in every shape a classifier may answer, embeddings and
// cosine scores, and the route input taken from each request form.
#include <gtest/gtest.h>

#include "lemon/routing/classifier_protocol.h"

namespace lemon::routing {
namespace {

using nlohmann::json;

Classifier llm_classifier() {
  Classifier c;
  c.id = "risk";
  c.type = ClassifierType::kLlm;
  c.model = "helper";
  c.prompt = "Is it risky?";
  c.labels = {"SAFE", "RISKY"};
  c.max_tokens = 64;
  return c;
}

TEST(RoutingClassifierProtocol, TheLlmRequestCarriesThePromptLabelsAndTheRequestAsJson) {
  RouteInput in;
  in.text = "rm -rf /";
  in.has_tools = true;
  in.metadata["team"] = "ops";
  const json body = llm_label_request(llm_classifier(), in);
  EXPECT_EQ(body["stream"], false);
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["max_tokens"], 64);
  EXPECT_EQ(body["response_format"]["type"], "json_object");
  EXPECT_EQ(body["chat_template_kwargs"]["enable_thinking"], false);
  const std::string system = body["messages"][0]["content"];
  EXPECT_TRUE(system.starts_with("Is it risky?\n\n")) << system;
  EXPECT_NE(system.find("SAFE, RISKY"), std::string::npos) << system;
  EXPECT_EQ(json::parse(body["messages"][1]["content"].get<std::string>()),
            json({{"chars", 8},
                  {"has_images", false},
                  {"has_tools", true},
                  {"metadata", {{"team", "ops"}}},
                  {"text", "rm -rf /"}}));
}

TEST(RoutingClassifierProtocol, OnlyAnExactReplyChoosesALabel) {
  const Classifier c = llm_classifier();
  auto chosen = read_llm_label_reply(c, R"(  {"model": "RISKY", "rationale": " deletes files "})");
  EXPECT_TRUE(chosen.ok);
  EXPECT_EQ(chosen.scores, (std::map<std::string, double>{{"RISKY", 1.0}}));
  EXPECT_EQ(chosen.rationale, "deletes files");
  auto fenced = read_llm_label_reply(c, "```json\n{\"model\":\"SAFE\",\"rationale\":\"ok\"}\n```");
  EXPECT_EQ(fenced.scores.count("SAFE"), 1u);
  for (const char* broken :
       {"RISKY", "The answer is {\"model\":\"RISKY\",\"rationale\":\"x\"}", R"({"model":"RISKY"})",
        R"({"model":"RISKY","rationale":"  "})", R"({"model":"risky","rationale":"x"})",
        R"({"model":"RISKY","rationale":"x","p":1})",
        "```json\n{\"model\":\"SAFE\",\"rationale\":\"ok\"}", "```\n{}\n``` trailing"}) {
    auto r = read_llm_label_reply(c, broken);
    EXPECT_TRUE(r.ok) << "a broken reply fails open, it is not an error: " << broken;
    EXPECT_TRUE(r.scores.empty()) << broken;
  }
}

TEST(RoutingClassifierProtocol, LabelScoresAreReadFromEveryShape) {
  auto chat = [](const std::string& content) {
    return json{{"choices", {{{"message", {{"role", "assistant"}, {"content", content}}}}}}};
  };
  EXPECT_EQ(read_label_scores(chat(R"({"PII": 0.9, "NO_PII": 0.1})")).scores.at("PII"), 0.9);
  EXPECT_EQ(read_label_scores(chat(R"([{"label":"A","score":0.2}])")).scores.at("A"), 0.2);
  EXPECT_EQ(read_label_scores(chat(R"({"scores":{"B":1}})")).scores.at("B"), 1.0);
  EXPECT_EQ(read_label_scores(chat(R"({"label":"C","score":0.5})")).scores.at("C"), 0.5);
  EXPECT_EQ(
      read_label_scores(json::parse(R"({"data":[{"label":"D","score":0.3}]})")).scores.at("D"),
      0.3);
  EXPECT_FALSE(read_label_scores(chat("no idea")).ok);
  EXPECT_FALSE(read_label_scores(chat(R"({"A": 1.5})")).ok) << "outside [0, 1]";
  EXPECT_FALSE(read_label_scores(json::parse(R"({"error":{"message":"x"}})")).ok);
}

TEST(RoutingClassifierProtocol, SemanticScoresAreTheBestCosinePerConceptClamped) {
  Classifier c;
  c.type = ClassifierType::kSemanticSimilarity;
  c.reference_phrases = {{"code", {"p1", "p2"}}, {"chat", {"p3"}}};
  std::map<std::string, std::vector<float>> phrases = {
      {"p1", {1, 0}}, {"p2", {0.6f, 0.8f}}, {"p3", {-1, 0}}};
  auto scores = semantic_scores(c, {0.6f, 0.8f}, phrases);
  ASSERT_TRUE(scores);
  EXPECT_NEAR(scores->at("code"), 1.0, 1e-6);
  EXPECT_EQ(scores->at("chat"), 0.0) << "a negative cosine is clamped to 0";
  EXPECT_FALSE(semantic_scores(c, {0, 0}, phrases)) << "zero norm";
  EXPECT_FALSE(semantic_scores(c, {1, 0, 0}, phrases)) << "mismatched lengths";
  phrases.erase("p3");
  EXPECT_FALSE(semantic_scores(c, {1, 0}, phrases)) << "a phrase without a vector";
}

TEST(RoutingClassifierProtocol, EmbeddingVectorsFollowTheirIndex) {
  auto v = embedding_vectors(
      json::parse(R"({"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}]})"));
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)[0], (std::vector<float>{1, 2}));
  EXPECT_EQ((*v)[1], (std::vector<float>{3, 4}));
  EXPECT_FALSE(embedding_vectors(json::parse(R"({"data":[{"embedding":[]}]})")));
  EXPECT_FALSE(embedding_vectors(json::parse(R"({"data":[{"embedding":["x"]}]})")));
  EXPECT_FALSE(embedding_vectors(json::parse(R"({"error":"no"})")));
}

TEST(RoutingRouteInput, TakesTheLatestUserTurnToolsImagesAndStringMetadata) {
  const json body = json::parse(R"({
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": "first"},
      {"role": "assistant", "content": "ok"},
      {"role": "user", "content": [{"type": "text", "text": "look"},
                                   {"type": "image_url", "image_url": {"url": "x"}},
                                   {"type": "text", "text": "here"}]},
      {"role": "assistant", "content": "later"}],
    "tools": [{"type": "function"}],
    "metadata": {"a": "1", "n": 2}})");
  const RouteInput in = route_input_from_body(body);
  EXPECT_EQ(in.text, "look\nhere");
  EXPECT_TRUE(in.has_images);
  EXPECT_TRUE(in.has_tools);
  EXPECT_EQ(in.metadata, (std::map<std::string, std::string>{{"a", "1"}}));
  EXPECT_FALSE(route_input_from_body({{"tools", json::array()}}).has_tools);
  EXPECT_EQ(route_input_from_body(json::parse(R"({"input":["a",{"type":"input_text","text":"b"},
            {"role":"assistant","content":"c"}]})"))
                .text,
            "a\nb");
}

TEST(RoutingRouteInput, RouteTraceMustBeABoolean) {
  EXPECT_FALSE(*route_trace_requested(json::object()));
  EXPECT_TRUE(*route_trace_requested({{"route_trace", true}}));
  auto bad = route_trace_requested({{"route_trace", "yes"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param(), "route_trace");
}

TEST(RoutingRouteInput, AConversationKeepsItsFingerprintAcrossTurns) {
  json first = {
      {"messages", {{{"role", "system"}, {"content", "s"}}, {{"role", "user"}, {"content", "q"}}}}};
  json later = first;
  later["messages"].push_back({{"role", "assistant"}, {"content", "a"}});
  later["messages"].push_back({{"role", "user"}, {"content", "q2"}});
  EXPECT_EQ(conversation_fingerprint(first), conversation_fingerprint(later));
  json other = first;
  other["messages"][1]["content"] = "different";
  EXPECT_NE(conversation_fingerprint(first), conversation_fingerprint(other));
  EXPECT_EQ(conversation_fingerprint({{"prompt", "q"}}),
            conversation_fingerprint({{"input", "q"}}));
}

}  // namespace
}  // namespace lemon::routing
