// Routing policies (collection.router) on the request path, against the real
// router and fake llama-servers: a request naming a policy is served by the
// candidate its rules choose (or its default_model), answers carry
// x-lemonade-route and x_lemonade_route (streams in their first event), a
// `loaded` preference spares a load, and POST routing/validate decides a
// sample prompt or says why a policy does not check.
#include <string>

#include <gtest/gtest.h>

#include "routing_policy_support.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

// user.a for code, user.b for long prompts, user.c otherwise.
json three_way_routing() {
  return {{"candidates", {"user.a", "user.b", "user.c"}},
          {"default_model", "user.c"},
          {"rules",
           {{{"id", "code"}, {"match", {{"keywords_any", {"Python", "rust"}}}}, {"route_to", "a"}},
            {{"id", "long"}, {"match", {{"min_chars", 200}}}, {"route_to", "user.b"}}}}};
}

class RoutingPolicyTest : public RoutingPolicyFixture {
 protected:
  void start_three_way() {
    env_.add_llm("a");
    env_.add_llm("b");
    env_.add_llm("c");
    ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
    ASSERT_NO_FATAL_FAILURE(register_policy(
        router_policy("user.pick", {"user.a", "b", "user.c"}, three_way_routing())));
  }
};

TEST_F(RoutingPolicyTest, RulesChooseTheCandidateAndAnUnmatchedRequestFallsOpenToTheDefault) {
  ASSERT_NO_FATAL_FAILURE(start_three_way());
  EXPECT_TRUE(health(port())["all_models_loaded"].empty()) << "a policy loads nothing itself";

  HttpReply code = http_post(port(), "/api/v1/chat/completions",
                             chat_text("user.pick", "Write some PYTHON for me"));
  ASSERT_EQ(code.status, 200) << code.body;
  EXPECT_EQ(code.json()["model"], "user.a") << "the answer names the candidate";
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a"}));
  EXPECT_EQ(served("user.a"), 1);

  HttpReply longer = http_post(port(), "/api/v1/chat/completions",
                               chat_text("pick", std::string(250, 'x'), {{"stream", false}}));
  ASSERT_EQ(longer.status, 200) << longer.body;
  EXPECT_EQ(longer.json()["model"], "user.b") << "a bare policy name routes too";
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a", "user.b"}));
  EXPECT_EQ(served("user.b"), 1);

  HttpReply plain =
      http_post(port(), "/api/v1/chat/completions", chat_text("user.pick", "hello there"));
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.json()["model"], "user.c");
  EXPECT_EQ(plain.json()["x_lemonade_route"]["default_used"], true) << plain.body;
  EXPECT_EQ(plain.json()["x_lemonade_route"]["matched_rule"], "");
  EXPECT_EQ(served("user.a"), 1);
  EXPECT_EQ(served("user.b"), 1);
  EXPECT_EQ(served("user.c"), 1);

  // Only the last user turn is routed on: an earlier "python" does not count.
  json turns = chat_text("user.pick", "thanks");
  turns["messages"] = {{{"role", "system"}, {"content", "You know rust."}},
                       {{"role", "user"}, {"content", "python?"}},
                       {{"role", "assistant"}, {"content", "yes"}},
                       {{"role", "user"}, {"content", "thanks"}}};
  HttpReply later = http_post(port(), "/api/v1/chat/completions", turns);
  ASSERT_EQ(later.status, 200) << later.body;
  EXPECT_EQ(later.json()["model"], "user.c") << later.body;
}

TEST_F(RoutingPolicyTest, EveryRoutedAnswerCarriesItsRouteAndATraceWhenAskedFor) {
  ASSERT_NO_FATAL_FAILURE(start_three_way());
  HttpReply plain = http_post(port(), "/api/v1/chat/completions", chat_text("user.pick", "rust"));
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.header("x-lemonade-route"), "code");
  const json object = plain.json()["x_lemonade_route"];
  EXPECT_EQ(object["version"], "1") << plain.body;
  EXPECT_EQ(object["route_to"], "user.a");
  EXPECT_EQ(object["matched_rule"], "code");
  EXPECT_EQ(object["default_used"], false);
  EXPECT_FALSE(object.contains("trace")) << "the trace is only given when asked for";

  HttpReply traced = http_post(port(), "/api/v1/chat/completions",
                               chat_text("user.pick", "hello", {{"route_trace", true}}));
  ASSERT_EQ(traced.status, 200) << traced.body;
  EXPECT_EQ(traced.header("x-lemonade-route"), "default");
  const json trace = traced.json()["x_lemonade_route"]["trace"];
  ASSERT_EQ(trace.size(), 2u) << traced.body;
  EXPECT_EQ(trace[0], (json{{"condition", "keywords_any"}, {"result", false}}));
  EXPECT_EQ(trace[1], (json{{"condition", "min_chars"}, {"result", false}}));
  const std::string backend_c = loaded_field(health(port()), "user.c", "backend_url");
  EXPECT_EQ(fake_state(backend_c)["last_request"].count("route_trace"), 0u)
      << "route_trace is not forwarded to the candidate";

  // A stream: the header before the first event, the object in the first
  // JSON event only.
  json body = chat_text("user.pick", std::string(300, 'y'), {{"route_trace", true}});
  body["stream"] = true;
  SseStream stream(port(), "/api/v1/chat/completions", body.dump());
  ASSERT_TRUE(stream.read_head());
  ASSERT_EQ(stream.status(), 200);
  EXPECT_EQ(stream.header("x-lemonade-route"), "long");
  auto events = stream.rest();
  ASSERT_TRUE(stream.ended_cleanly());
  ASSERT_GE(events.size(), 3u);
  const json first = json::parse(events[0].data);
  EXPECT_EQ(first["x_lemonade_route"]["route_to"], "user.b") << events[0].data;
  EXPECT_EQ(first["x_lemonade_route"]["trace"].size(), 2u) << events[0].data;
  EXPECT_EQ(first["model"], "user.b");
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_EQ(events[i].data.find("x_lemonade_route"), std::string::npos) << events[i].data;
  }
  EXPECT_TRUE(events.back().is_done());

  // Completions and Responses are routed as chat is.
  HttpReply completion =
      http_post(port(), "/api/v1/completions",
                json{{"model", "user.pick"}, {"prompt", "rust please"}, {"max_tokens", 3}});
  ASSERT_EQ(completion.status, 200) << completion.body;
  EXPECT_EQ(completion.header("x-lemonade-route"), "code");
  EXPECT_EQ(completion.json()["x_lemonade_route"]["route_to"], "user.a");
  HttpReply responses =
      http_post(port(), "/api/v1/responses", json{{"model", "user.pick"}, {"input", "hi"}});
  ASSERT_EQ(responses.status, 200) << responses.body;
  EXPECT_EQ(responses.header("x-lemonade-route"), "default");
  EXPECT_EQ(responses.json()["x_lemonade_route"]["route_to"], "user.c") << responses.body;

  HttpReply bad = http_post(port(), "/api/v1/chat/completions",
                            chat_text("user.pick", "rust", {{"route_trace", "yes"}}));
  expect_error(bad, 400, "invalid_request_error", "route_trace",
               "a route_trace that is no boolean");
  EXPECT_FALSE(bad.has_header("x-lemonade-route"));
  HttpReply embed =
      http_post(port(), "/api/v1/embeddings", json{{"model", "user.pick"}, {"input", "x"}});
  expect_error(embed, 400, "unsupported_operation", "model", "embeddings from a policy");
}

TEST_F(RoutingPolicyTest, APreferenceForLoadedCandidatesSparesALoad) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  // Both rules match a greeting; without the preference the first (b) wins.
  json routing = {{"candidates", {"user.a", "user.b"}},
                  {"default_model", "user.b"},
                  {"rules",
                   {{{"id", "to-b"}, {"match", {{"keywords_any", {"hi"}}}}, {"route_to", "user.b"}},
                    {{"id", "to-a"}, {"match", {{"keywords_any", {"hi"}}}}, {"route_to", "user.a"}},
                    {{"id", "warm-b"}, {"match", {{"loaded", true}}}, {"route_to", "user.b"}}}},
                  {"state", {{"prefer", {"loaded"}}}}};
  ASSERT_NO_FATAL_FAILURE(
      register_policy(router_policy("user.warm", {"user.a", "user.b"}, routing)));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));

  HttpReply r = http_post(port(), "/api/v1/chat/completions",
                          chat_text("user.warm", "hi", {{"route_trace", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-lemonade-route"), "to-a");
  const json decision = r.json()["x_lemonade_route"];
  EXPECT_EQ(decision["route_to"], "user.a") << r.body;
  EXPECT_EQ(decision["qualified"], (json{"to-b", "to-a"})) << "warm-b's candidate is not loaded";
  EXPECT_EQ(decision["candidates"]["user.a"]["loaded"], true) << r.body;
  EXPECT_EQ(decision["candidates"]["user.b"]["loaded"], false) << r.body;
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a"})) << "user.b was not loaded";
  EXPECT_EQ(served("user.a"), 1);

  // Once b is loaded too, the tie goes to the first rule again.
  ASSERT_NO_FATAL_FAILURE(load_ok("user.b"));
  HttpReply both = http_post(port(), "/api/v1/chat/completions", chat_text("user.warm", "hi"));
  ASSERT_EQ(both.status, 200) << both.body;
  EXPECT_EQ(both.header("x-lemonade-route"), "to-b");
  EXPECT_EQ(served("user.b"), 1);
}

TEST_F(RoutingPolicyTest, APolicyChangedByAPullOrWrittenBeforeStartRoutesAsItNowReads) {
  env_.add_llm("a");
  env_.add_llm("b");
  json entry = router_policy("user.disk", {"user.a", "user.b"}, {});
  entry.erase("model_name");
  entry["routing"] = {
      {"candidates", {"user.a", "user.b"}},
      {"default_model", "user.b"},
      {"rules",
       {{{"id", "greet"}, {"match", {{"keywords_any", {"hello"}}}}, {"route_to", "user.a"}}}}};
  env_.add_user_model("disk", entry);
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  HttpReply first = http_post(port(), "/api/v1/chat/completions", chat_text("disk", "hello"));
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.header("x-lemonade-route"), "greet") << "a registration read at start routes";
  EXPECT_EQ(first.json()["model"], "user.a");

  json changed = entry;
  changed["model_name"] = "user.disk";
  changed["routing"]["rules"][0]["route_to"] = "user.b";
  changed["routing"]["rules"][0]["id"] = "greet-b";
  changed["routing"]["default_model"] = "user.a";
  ASSERT_NO_FATAL_FAILURE(register_policy(changed));
  HttpReply second = http_post(port(), "/api/v1/chat/completions", chat_text("disk", "hello"));
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(second.header("x-lemonade-route"), "greet-b") << "the pull's policy routes at once";
  EXPECT_EQ(second.json()["model"], "user.b");
}

TEST_F(RoutingPolicyTest, ACandidatesErrorPassesWithoutARoute) {
  env_.add_llm("a");
  env_.write_sidecar(env_.add_llm("b"), {{"error_status", {{"status", 500}, {"message", "boom"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  ASSERT_NO_FATAL_FAILURE(register_policy(router_policy(
      "user.duo", {"user.a", "user.b"},
      {{"candidates", {"user.a", "user.b"}},
       {"default_model", "user.a"},
       {"rules", {{{"id", "b"}, {"match", {{"keywords_any", {"b"}}}}, {"route_to", "user.b"}}}}})));
  HttpReply failed = http_post(port(), "/api/v1/chat/completions", chat_text("user.duo", "b"));
  EXPECT_EQ(failed.status, 500) << failed.body;
  EXPECT_FALSE(failed.has_header("x-lemonade-route")) << failed.body;
  EXPECT_FALSE(failed.json().contains("x_lemonade_route")) << failed.body;
  json body = chat_text("user.duo", "b");
  body["stream"] = true;
  HttpReply streamed = http_post(port(), "/api/v1/chat/completions", body);
  EXPECT_EQ(streamed.status, 500) << streamed.body;
  EXPECT_FALSE(streamed.has_header("x-lemonade-route")) << streamed.body;
  HttpReply ollama = http_post(port(), "/api/chat",
                               json{{"model", "duo:latest"},
                                    {"stream", false},
                                    {"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  ASSERT_EQ(ollama.status, 200) << ollama.body;
  EXPECT_EQ(ollama.header("x-lemonade-route"), "default");
}

// POST routing/validate decides without registering.
class RoutingValidateTest : public RoutingPolicyFixture {
 protected:
  void SetUp() override {
    env_.add_llm("a");
    env_.add_llm("b");
    ASSERT_NO_FATAL_FAILURE(start_router());
  }
  static json policy(const json& routing) {
    json p = router_policy("user.try", {"user.a", "user.b"}, routing);
    return p;
  }
  static json good_routing() {
    return {
        {"candidates", {"user.a", "user.b"}},
        {"default_model", "user.a"},
        {"rules",
         {{{"id", "code"},
           {"match", {{"any", {{{"regex", "def \\w+\\("}}, {{"keywords_all", {"fn", "rust"}}}}}}},
           {"route_to", "user.b"},
           {"outputs", {{"tier", "big"}}}}}}};
  }
  void expect_invalid_policy(const json& doc, const std::string& says, const std::string& what) {
    HttpReply r = http_post(port(), "/api/v1/routing/validate", json{{"policy", doc}});
    expect_error(r, 400, "invalid_routing_policy", "", what);
    const std::string message = r.json()["error"].value("message", "");
    EXPECT_EQ(message.rfind("Invalid routing policy: ", 0), 0u) << what << ": " << message;
    EXPECT_NE(message.find(says), std::string::npos) << what << ": " << r.body;
  }
};

TEST_F(RoutingValidateTest, AValidPolicyDecidesTheSamplePromptWithItsTrace) {
  HttpReply r = http_post(port(), "/api/v1/routing/validate",
                          json{{"policy", policy(good_routing())}, {"prompt", "a rust FN please"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json decision = r.json()["decision"];
  EXPECT_EQ(decision["route_to"], "user.b") << r.body;
  EXPECT_EQ(decision["matched_rule"], "code");
  EXPECT_EQ(decision["default_used"], false);
  EXPECT_EQ(decision["outputs"], (json{{"tier", "big"}}));
  EXPECT_EQ(decision["trace"], (json{{{"condition", "regex"}, {"result", false}},
                                     {{"condition", "keywords_all"}, {"result", true}}}))
      << r.body;
  EXPECT_EQ(r.json()["normalized_policy"]["routing"]["rules"][0]["id"], "code");

  HttpReply open = http_post(port(), "/v1/routing/validate",
                             json{{"policy", policy(good_routing())}, {"prompt", "hello"}});
  ASSERT_EQ(open.status, 200) << open.body;
  EXPECT_EQ(open.json()["decision"]["route_to"], "user.a");
  EXPECT_EQ(open.json()["decision"]["default_used"], true);

  json stats = http_get(port(), "/api/v1/stats").json();
  EXPECT_EQ(stats["routing_decisions_total"], 0) << "validation is not counted";
  EXPECT_TRUE(health(port())["all_models_loaded"].empty()) << "validation loads nothing here";
}

TEST_F(RoutingValidateTest, InvalidPoliciesAreRefusedWithThePathAtFault) {
  json undeclared = policy(good_routing());
  undeclared["components"] = {"user.a"};
  expect_invalid_policy(undeclared,
                        "routing.candidates[1] references component 'user.b' that is not declared",
                        "an undeclared candidate");
  json unknown = policy(good_routing());
  unknown["components"].push_back("user.nope");
  expect_invalid_policy(unknown,
                        "collection.components[2] references unknown component 'user.nope'",
                        "an unknown component");
  json stray = good_routing();
  stray["candidates"] = {"user.a"};
  expect_invalid_policy(policy(stray),
                        "routing.rules[0].route_to 'user.b' must be listed in routing.candidates",
                        "route_to not a candidate");
  json fallback = good_routing();
  fallback["default_model"] = "user.b";
  fallback["candidates"] = {"user.a"};
  fallback["rules"][0]["route_to"] = "user.a";
  expect_invalid_policy(policy(fallback),
                        "routing.default_model 'user.b' must be listed in routing.candidates",
                        "default_model not a candidate");
  json backtracking = good_routing();
  backtracking["rules"][0]["match"] = {{"regex", "(a+)+$"}};
  expect_invalid_policy(policy(backtracking), "routing.rules[0].match.regex",
                        "a nested quantifier");
  expect_invalid_policy(policy(backtracking), "catastrophic backtracking", "a nested quantifier");
  json extra = good_routing();
  extra["rules"][0]["match"]["any"][1]["keyword"] = {"x"};
  expect_invalid_policy(policy(extra),
                        "routing.rules[0].match.any[1] contains unknown key 'keyword'",
                        "an unknown key");
  json version = policy(good_routing());
  version["version"] = "2";
  expect_invalid_policy(version, "Unsupported collection.router schema major '2'", "version 2");
}

TEST_F(RoutingValidateTest, BodyErrorsAreInvalidRequests) {
  const std::string path = "/api/v1/routing/validate";
  expect_error(http_request(port(), "POST", path, ""), 400, "invalid_request_error", "",
               "an empty body");
  expect_error(http_post(port(), path, std::string("{nope")), 400, "invalid_request_error", "",
               "invalid JSON");
  expect_error(http_post(port(), path, json{{"prompt", "x"}}), 400, "invalid_request_error",
               "policy", "no policy");
  expect_error(http_post(port(), path, json{{"policy", "text"}}), 400, "invalid_request_error",
               "policy", "a policy that is not an object");
  const json p = policy(good_routing());
  expect_error(http_post(port(), path, json{{"policy", p}, {"prompt", 3}}), 400,
               "invalid_request_error", "prompt", "a prompt that is not a string");
  expect_error(http_post(port(), path, json{{"policy", p}, {"has_tools", "yes"}}), 400,
               "invalid_request_error", "has_tools", "has_tools not a boolean");
  expect_error(http_post(port(), path, json{{"policy", p}, {"metadata", {{"k", 1}}}}), 400,
               "invalid_request_error", "metadata", "a metadata value that is not a string");
  EXPECT_EQ(http_get(port(), path).status, 405);
}

}  // namespace
}  // namespace lemon::testing
