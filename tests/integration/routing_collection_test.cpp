// Collections and routing policies seen from outside, against the real
// router, fake llama-servers and a fake Hugging Face hub: POST /pull
// registers a collection (downloading a component it lacks) and refuses a
// bad one, a component in use cannot be deleted, a collection.omni is listed
// but its chat is refused, the Anthropic and Ollama rooms route like the
// OpenAI ones, a key limited to a policy is served by its candidates, and
// /stats and /metrics count decisions.
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "lemon/auth/api_keys.h"
#include "routing_policy_support.h"
#include "support/fake_hub.h"
#include "support/prometheus_text.h"
#include "support/raw_http.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

constexpr const char* kRepo = "org/tiny-GGUF";

json duo_routing() {
  return {{"candidates", {"user.a", "user.b"}},
          {"default_model", "user.a"},
          {"rules",
           {{{"id", "code"}, {"match", {{"keywords_any", {"rust"}}}}, {"route_to", "user.b"}}}}};
}

// The entry of /api/v1/models's data named `id` (with show_all), or null.
json listed(int port, const std::string& id, bool show_all = true) {
  const json models =
      http_get(port, show_all ? "/api/v1/models?show_all=true" : "/api/v1/models").json();
  for (const auto& m : models["data"]) {
    if (m["id"] == id) {
      return m;
    }
  }
  return nullptr;
}

class RoutingCollectionTest : public RoutingPolicyFixture {
 protected:
  // user.a and user.b, and user.duo routing between them (duo_routing).
  void add_duo() {
    env_.add_llm("a");
    env_.add_llm("b");
    env_.add_user_model("duo", {{"recipe", "collection.router"},
                                {"version", "1"},
                                {"components", {"user.a", "user.b"}},
                                {"routing", duo_routing()}});
  }

  // Starts the router with one API key, of inference scope, whose list of
  // models is `model` alone.
  void start_with_key(const std::string& model, const std::vector<std::string>& args = {}) {
    json config;
    config["auth"]["keys"] = {{{"name", "limited"},
                               {"key_sha256", auth::hex_of(auth::sha256_of_key(kKey))},
                               {"scopes", {"inference"}},
                               {"models", {model}}}};
    env_.write_config(config);
    ASSERT_NO_FATAL_FAILURE(start_router(args, env_.config_env()));
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port()); }
  static HeaderList key_headers() {
    return {{"Authorization", std::string("Bearer ") + kKey}, {"Content-Type", "application/json"}};
  }

  static constexpr const char* kKey = "k-limited";
};

TEST_F(RoutingCollectionTest, PullRegistersAndListsACollectionAndRefusesABadOne) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(
      register_policy(router_policy("user.duo", {"a", "user.b"}, duo_routing())));
  const json duo = listed(port(), "duo");  // listed by its public id
  ASSERT_TRUE(duo.is_object()) << http_get(port(), "/api/v1/models?show_all=true").body;
  EXPECT_EQ(duo["recipe"], "collection.router");
  EXPECT_EQ(duo["components"], (json{"user.a", "user.b"})) << "components by their names";
  std::ifstream in(env_.cache_dir() + "/user_models.json");
  const json saved = json::parse(in)["duo"];
  EXPECT_EQ(saved["recipe"], "collection.router") << saved.dump();
  EXPECT_EQ(saved["routing"], duo_routing()) << "the policy is kept as written";
  EXPECT_EQ(saved["version"], "1");

  // Loading a router loads nothing: its candidates load as requests choose.
  HttpReply loaded = load(port(), "user.duo");
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());

  json missing = router_policy("user.bad", {"user.a", "user.zz"}, duo_routing());
  expect_error(http_post(port(), "/api/v1/pull", missing), 400, "invalid_request_error",
               "components", "a component that is not registered");
  json stray = duo_routing();
  stray["rules"][0]["route_to"] = "user.c";
  env_.add_llm("c");
  HttpReply bad = http_post(port(), "/api/v1/pull", router_policy("user.bad", {"a", "b"}, stray));
  expect_error(bad, 400, "invalid_routing_policy", "routing", "a rule naming no candidate");
  json nested = router_policy("user.bad", {"user.duo"}, duo_routing());
  expect_error(http_post(port(), "/api/v1/pull", nested), 400, "invalid_request_error",
               "components", "a collection in a collection");
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.bad").status, 404) << "nothing was registered";
}

TEST_F(RoutingCollectionTest, PullingACollectionDownloadsItsComponentsAndGuardsThemFromDelete) {
  FakeHub hub;
  hub.add_random_file(kRepo, "tiny-Q4_0.gguf", 1u << 20, 1);
  ASSERT_TRUE(hub.start());
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"HF_ENDPOINT", hub.endpoint()}}));
  HttpReply registered = http_post(port(), "/api/v1/models/register",
                                   json{{"model_name", "user.tiny"},
                                        {"checkpoint", std::string(kRepo) + ":Q4_0"},
                                        {"recipe", "llamacpp"}});
  ASSERT_EQ(registered.status, 200) << registered.body;
  ASSERT_EQ(http_get(port(), "/api/v1/models/user.tiny").json()["downloaded"], false);

  json routing = {
      {"candidates", {"user.a", "user.tiny"}},
      {"default_model", "user.tiny"},
      {"rules", {{{"id", "code"}, {"match", {{"keywords_any", {"rust"}}}}, {"route_to", "a"}}}}};
  ASSERT_NO_FATAL_FAILURE(register_policy(router_policy("user.mix", {"a", "tiny"}, routing)));
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.tiny").json()["downloaded"], true)
      << "the pull downloaded the missing component";
  EXPECT_TRUE(hub.wait_requests(std::string(kRepo) + "/tiny-Q4_0.gguf", 1));
  HttpReply routed = http_post(port(), "/api/v1/chat/completions", chat_text("user.mix", "hi"));
  ASSERT_EQ(routed.status, 200) << routed.body;
  EXPECT_EQ(routed.json()["model"], "user.tiny") << "the downloaded default serves";

  HttpReply in_use = http_post(port(), "/api/v1/delete", json{{"model_name", "user.tiny"}});
  expect_error(in_use, 409, "model_in_use", "model_name", "a component of a collection");
  EXPECT_NE(in_use.json()["error"]["message"].get<std::string>().find("user.mix"),
            std::string::npos)
      << in_use.body;
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.tiny").json()["downloaded"], true);

  HttpReply gone = http_post(port(), "/api/v1/delete", json{{"model_name", "user.mix"}});
  ASSERT_EQ(gone.status, 200) << gone.body;
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.mix").status, 404);
  expect_error(http_post(port(), "/api/v1/chat/completions", chat_text("user.mix", "hi")), 404,
               "model_not_found", "model", "a chat to a deleted policy");
  HttpReply freed = http_post(port(), "/api/v1/delete", json{{"model_name", "user.tiny"}});
  ASSERT_EQ(freed.status, 200) << freed.body;
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.tiny").status, 404);
}

TEST_F(RoutingCollectionTest, AStreamingPullOfACollectionReportsEachComponentsDownload) {
  FakeHub hub;
  hub.add_random_file(kRepo, "tiny-Q4_0.gguf", 1u << 20, 1);
  hub.add_random_file(kRepo, "tiny-Q8_0.gguf", 2u << 20, 2);
  ASSERT_TRUE(hub.start());
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"HF_ENDPOINT", hub.endpoint()}}));
  for (const char* variant : {"Q4_0", "Q8_0"}) {
    HttpReply r = http_post(port(), "/api/v1/models/register",
                            json{{"model_name", std::string("user.") + variant},
                                 {"checkpoint", std::string(kRepo) + ":" + variant},
                                 {"recipe", "llamacpp"}});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  json body = router_policy(
      "user.pair", {"Q4_0", "Q8_0"},
      {{"candidates", {"Q4_0", "Q8_0"}},
       {"default_model", "Q8_0"},
       {"rules", {{{"id", "short"}, {"match", {{"max_chars", 10}}}, {"route_to", "user.Q4_0"}}}}});
  body["stream"] = true;
  SseStream s(port(), "/api/v1/pull", body.dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  auto events = s.rest();
  ASSERT_TRUE(s.ended_cleanly());
  ASSERT_GE(events.size(), 3u);
  std::set<std::string> files;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    ASSERT_EQ(events[i].event, "progress") << events[i].data;
    files.insert(json::parse(events[i].data)["file"].get<std::string>());
  }
  EXPECT_EQ(files, (std::set<std::string>{"tiny-Q4_0.gguf", "tiny-Q8_0.gguf"}));
  EXPECT_EQ(events.back().event, "complete") << events.back().data;
  EXPECT_EQ(json::parse(events.back().data)["percent"], 100);
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.pair").json()["downloaded"], true);
  HttpReply routed = http_post(port(), "/api/v1/chat/completions", chat_text("pair", "hi"));
  ASSERT_EQ(routed.status, 200) << routed.body;
  EXPECT_EQ(routed.json()["model"], "user.Q4_0");
}

// A key whose model list names a policy may use the policy (its candidates
// come with it) but not the candidates by their own names.
TEST_F(RoutingCollectionTest, AKeyLimitedToAPolicyIsServedByItsCandidates) {
  add_duo();
  ASSERT_NO_FATAL_FAILURE(start_with_key("user.duo", {"--max-loaded-models", "4"}));
  HttpReply routed = url_request(base(), "POST", "/v1/chat/completions",
                                 chat_text("user.duo", "rust").dump(), key_headers());
  ASSERT_EQ(routed.status, 200) << routed.body;
  EXPECT_EQ(routed.header("x-lemonade-route"), "code");
  EXPECT_EQ(routed.json()["model"], "user.b");
  HttpReply direct = url_request(base(), "POST", "/v1/chat/completions",
                                 chat_text("user.b", "rust").dump(), key_headers());
  EXPECT_EQ(direct.status, 403) << direct.body;
}

TEST_F(RoutingCollectionTest, APolicyNamedByAnAliasOrWithItsLatestTagIsRouted) {
  add_duo();
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  ASSERT_EQ(
      http_post(port(), "/internal/aliases", json{{"alias", "pick"}, {"target", "duo"}}).status,
      200);
  for (const char* name : {"duo:latest", "pick"}) {
    HttpReply routed = http_post(port(), "/v1/chat/completions", chat_text(name, "rust"));
    ASSERT_EQ(routed.status, 200) << name << ": " << routed.body;
    EXPECT_EQ(routed.header("x-lemonade-route"), "code") << name;
    EXPECT_EQ(routed.json()["model"], "user.b") << name;
  }
}

TEST_F(RoutingCollectionTest, ACollectionCannotTakeTheNameOfAnothersComponent) {
  add_duo();
  ASSERT_NO_FATAL_FAILURE(start_router());
  json nested = router_policy(
      "user.b", {"user.a"},
      {{"candidates", {"user.a"}},
       {"default_model", "user.a"},
       {"rules", {{{"id", "any"}, {"match", {{"min_chars", 0}}}, {"route_to", "user.a"}}}}});
  expect_error(http_post(port(), "/api/v1/pull", nested), 409, "model_in_use", "model_name",
               "user.b is a component of user.duo");
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.b").json()["recipe"], "llamacpp");
}

TEST_F(RoutingCollectionTest, ValidatingAPolicyNeedsTheKeyToListItsComponents) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_with_key("user.a"));
  json policy = router_policy("user.duo", {"user.a", "user.b"}, duo_routing());
  HttpReply refused =
      url_request(base(), "POST", "/api/v1/routing/validate",
                  json{{"policy", policy}, {"prompt", "rust"}}.dump(), key_headers());
  EXPECT_EQ(refused.status, 403) << refused.body;
  policy["components"] = {"user.a"};
  policy["routing"] = {
      {"candidates", {"user.a"}},
      {"default_model", "user.a"},
      {"rules", {{{"id", "any"}, {"match", {{"min_chars", 0}}}, {"route_to", "user.a"}}}}};
  HttpReply allowed =
      url_request(base(), "POST", "/api/v1/routing/validate",
                  json{{"policy", policy}, {"prompt", "rust"}}.dump(), key_headers());
  EXPECT_EQ(allowed.status, 200) << allowed.body;
}

// user_models.json may name a collection's components as a client does
// ("a" for "user.a"): they still count as its components.
TEST_F(RoutingCollectionTest, ComponentsWrittenByTheirBareNamesAreStillGuardedAndCounted) {
  env_.add_llm("a");
  env_.add_llm("b");
  env_.add_user_model("hand", {{"recipe", "collection.router"},
                               {"version", "1"},
                               {"components", {"a", "b"}},
                               {"routing", duo_routing()}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_TRUE(listed(port(), "hand", false).is_object())
      << "downloaded, as its components are: " << http_get(port(), "/api/v1/models").body;
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.hand").json()["downloaded"], true);
  expect_error(http_post(port(), "/api/v1/delete", json{{"model_name", "user.a"}}), 409,
               "model_in_use", "model_name", "a component named by its bare name");
  HttpReply routed = http_post(port(), "/api/v1/chat/completions", chat_text("hand", "rust"));
  ASSERT_EQ(routed.status, 200) << routed.body;
  EXPECT_EQ(routed.json()["model"], "user.b");
}

TEST_F(RoutingCollectionTest, AnOmniCollectionIsListedLoadsItsComponentsAndRefusesChat) {
  env_.add_llm("a");
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  ASSERT_NO_FATAL_FAILURE(register_policy(json{{"model_name", "user.kit"},
                                               {"recipe", "collection.omni"},
                                               {"components", {"user.a", "e"}},
                                               {"system_prompt", "You help."}}));
  const json kit = listed(port(), "kit");
  ASSERT_TRUE(kit.is_object()) << http_get(port(), "/api/v1/models?show_all=true").body;
  EXPECT_EQ(kit["recipe"], "collection.omni");
  EXPECT_EQ(kit["components"], (json{"user.a", "user.e"}));

  HttpReply chat_reply =
      http_post(port(), "/api/v1/chat/completions", chat_text("user.kit", "hello"));
  expect_error(chat_reply, 400, "unsupported_operation", "model", "an omni chat");
  EXPECT_TRUE(health(port())["all_models_loaded"].empty()) << "the refusal loads nothing";

  HttpReply loaded = load(port(), "user.kit");
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a", "user.e"}));
}

TEST_F(RoutingCollectionTest, AnthropicAndOllamaRequestsAreRoutedWithTheirHeader) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  ASSERT_NO_FATAL_FAILURE(
      register_policy(router_policy("user.duo", {"user.a", "user.b"}, duo_routing())));

  const json message = {{"model", "user.duo"},
                        {"max_tokens", 8},
                        {"messages", {{{"role", "user"}, {"content", "some rust please"}}}}};
  HttpReply anthropic = raw_request(
      port(), "POST", "/v1/messages",
      {{"Content-Type", "application/json"}, {"anthropic-version", "2023-06-01"}}, message.dump());
  ASSERT_EQ(anthropic.status, 200) << anthropic.body;
  EXPECT_EQ(anthropic.header("x-lemonade-route"), "code");
  EXPECT_EQ(anthropic.json()["type"], "message") << anthropic.body;
  EXPECT_EQ(served("user.b"), 1);

  json streamed = message;
  streamed["stream"] = true;
  streamed["messages"][0]["content"] = "hello";
  SseStream stream(port(), "POST", "/v1/messages", streamed.dump(),
                   {{"anthropic-version", "2023-06-01"}});
  ASSERT_TRUE(stream.read_head());
  ASSERT_EQ(stream.status(), 200);
  EXPECT_EQ(stream.header("x-lemonade-route"), "default");
  stream.rest();
  EXPECT_TRUE(stream.ended_cleanly());
  EXPECT_EQ(served("user.a"), 1);

  HttpReply ollama = http_post(port(), "/api/chat",
                               json{{"model", "user.duo"},
                                    {"stream", false},
                                    {"messages", {{{"role", "user"}, {"content", "rust again"}}}}});
  ASSERT_EQ(ollama.status, 200) << ollama.body;
  EXPECT_EQ(ollama.header("x-lemonade-route"), "code");
  EXPECT_EQ(ollama.json()["done"], true) << ollama.body;
  EXPECT_EQ(served("user.b"), 2);

  const json stats = http_get(port(), "/api/v1/stats").json();
  EXPECT_EQ(stats["routing_decisions_total"], 3) << stats.dump();
}

TEST_F(RoutingCollectionTest, StatsAndMetricsCountDecisionsByRuleAndConversationSwitches) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "4"}));
  ASSERT_NO_FATAL_FAILURE(
      register_policy(router_policy("user.duo", {"user.a", "user.b"}, duo_routing())));
  json first = chat_text("user.duo", "hello");
  first["messages"].insert(first["messages"].begin(),
                           json::object({{"role", "system"}, {"content", "Be brief"}}));
  HttpReply opened = http_post(port(), "/api/v1/chat/completions", first);
  ASSERT_EQ(opened.status, 200) << opened.body;
  // The same conversation's next turn goes to the other model: a switch.
  json second = first;
  second["messages"].push_back(json::object({{"role", "assistant"}, {"content", "Hi."}}));
  second["messages"].push_back(json::object({{"role", "user"}, {"content", "now some rust"}}));
  HttpReply switched = http_post(port(), "/api/v1/chat/completions", second);
  ASSERT_EQ(switched.status, 200) << switched.body;
  EXPECT_EQ(switched.header("x-lemonade-route"), "code");
  // Another conversation, and the first again on the same model: no switch.
  ASSERT_EQ(http_post(port(), "/api/v1/chat/completions", chat_text("user.duo", "rust")).status,
            200);
  ASSERT_EQ(http_post(port(), "/api/v1/chat/completions", second).status, 200);

  const json stats = http_get(port(), "/api/v1/stats").json();
  EXPECT_EQ(stats["routing_decisions_total"], 4) << stats.dump();
  EXPECT_EQ(stats["routing_switches_total"], 1) << stats.dump();
  EXPECT_EQ(stats["routing_policies"]["user.duo"]["rules"], (json{{"code", 3}, {"default", 1}}))
      << stats.dump();

  std::string problem;
  auto metrics = parse_prom_text(http_get(port(), "/metrics").body, &problem);
  ASSERT_TRUE(metrics) << problem;
  EXPECT_EQ(metrics->value("lemonade_routing_decisions_total",
                           {{"policy", "user.duo"}, {"rule", "code"}}),
            3.0);
  EXPECT_EQ(metrics->value("lemonade_routing_decisions_total",
                           {{"policy", "user.duo"}, {"rule", "default"}}),
            1.0);
  EXPECT_EQ(metrics->value("lemonade_routing_switches_total", {{"policy", "user.duo"}}), 1.0);
}

}  // namespace
}  // namespace lemon::testing
