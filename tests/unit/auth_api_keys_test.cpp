// API keys (api_keys.h): the `auth` section's checks name the JSON path of
// what is wrong; keys are found by their hash; scopes and model allow-lists;
// the legacy variables' keys.
#include <gtest/gtest.h>

#include "lemon/auth/api_keys.h"

namespace lemon::auth {
namespace {

using nlohmann::json;

json key_entry(const std::string& name, const std::string& key, json scopes) {
  return {{"name", name}, {"key_sha256", hex_of(sha256_of_key(key))}, {"scopes", scopes}};
}

std::string error_of(const json& auth) {
  auto ring = build_key_ring(auth, "", "");
  return ring.ok() ? std::string() : ring.error().message();
}

TEST(ApiKeys, TheHashIsSha256InLowerCaseHex) {
  EXPECT_EQ(hex_of(sha256_of_key("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ApiKeys, AKeyIsFoundByItsHashAndHasItsScopes) {
  auto ring = build_key_ring({{"keys",
                               {key_entry("chat", "k-chat", {"inference"}),
                                key_entry("ops", "k-ops", {"read", "admin"})}}},
                             "", "");
  ASSERT_TRUE(ring.ok()) << ring.error().message();
  const ApiKey* chat = ring->find("k-chat");
  ASSERT_NE(chat, nullptr);
  EXPECT_EQ(chat->name, "chat");
  EXPECT_TRUE(chat->has(Scope::kInference));
  EXPECT_TRUE(chat->has(Scope::kInferenceOrRead));
  EXPECT_FALSE(chat->has(Scope::kRead));
  EXPECT_FALSE(chat->has(Scope::kAdmin));
  EXPECT_TRUE(chat->has(Scope::kPublic));
  const ApiKey* ops = ring->find("k-ops");
  ASSERT_NE(ops, nullptr);
  EXPECT_TRUE(ops->has(Scope::kAdmin));
  EXPECT_TRUE(ops->has(Scope::kInferenceOrRead));
  EXPECT_FALSE(ops->has(Scope::kInference));
  EXPECT_EQ(ops->scope_list(), "read, admin");
  EXPECT_EQ(ring->find("k-cha"), nullptr);
  EXPECT_EQ(ring->find(""), nullptr);
}

TEST(ApiKeys, TheLegacyVariablesAreKeysOfTheirOwn) {
  auto alone = build_key_ring(json::object(), "user-key", "");
  ASSERT_TRUE(alone.ok());
  ASSERT_NE(alone->find("user-key"), nullptr);
  EXPECT_EQ(alone->find("user-key")->scopes, kEveryScope) << "LEMONADE_API_KEY opens everything";

  auto both = build_key_ring(json::object(), "user-key", "admin-key");
  ASSERT_TRUE(both.ok());
  const ApiKey* user = both->find("user-key");
  const ApiKey* admin = both->find("admin-key");
  ASSERT_NE(user, nullptr);
  ASSERT_NE(admin, nullptr);
  EXPECT_FALSE(user->has(Scope::kAdmin)) << "with an admin key, the user key is not one";
  EXPECT_TRUE(user->has(Scope::kInference));
  EXPECT_EQ(admin->scopes, kEveryScope);
  EXPECT_EQ(admin->name, "admin_api_key");
  EXPECT_TRUE(build_key_ring(json::object(), "", "")->empty());
}

TEST(ApiKeys, AModelListTakesNamesAndGlobs) {
  ApiKey key;
  key.models = {"user.chat", "Qwen3-*"};
  EXPECT_TRUE(key.allows_model("user.chat"));
  EXPECT_TRUE(key.allows_model("Qwen3-8B-GGUF"));
  EXPECT_FALSE(key.allows_model("user.chat2"));
  EXPECT_FALSE(key.allows_model("Llama-3.2-1B"));
  key.models.clear();
  EXPECT_TRUE(key.allows_model("anything")) << "no list: every model";
}

TEST(ApiKeys, EveryMistakeNamesItsPath) {
  const json good = key_entry("a", "ka", {"read"});
  struct Case {
    json auth;
    const char* path;
  };
  json bad_hash = good;
  bad_hash["key_sha256"] = "ABC";
  json bad_scope = good;
  bad_scope["scopes"] = {"read", "root"};
  json no_scope = good;
  no_scope["scopes"] = json::array();
  json bad_name = good;
  bad_name["name"] = "a b";
  json extra = good;
  extra["secret"] = "x";
  json bad_limit = good;
  bad_limit["max_concurrent"] = 0;
  json bad_rate = good;
  bad_rate["requests_per_minute"] = "10";
  json bad_models = good;
  bad_models["models"] = {"ok", 3};
  const std::vector<Case> cases = {
      {json::array(), "auth"},
      {{{"key", json::array()}}, "auth.key"},
      {{{"keys", json::object()}}, "auth.keys"},
      {{{"keys", {good, bad_hash}}}, "auth.keys[1].key_sha256"},
      {{{"keys", {bad_scope}}}, "auth.keys[0].scopes[1]"},
      {{{"keys", {no_scope}}}, "auth.keys[0].scopes"},
      {{{"keys", {bad_name}}}, "auth.keys[0].name"},
      {{{"keys", {extra}}}, "auth.keys[0].secret"},
      {{{"keys", {bad_limit}}}, "auth.keys[0].max_concurrent"},
      {{{"keys", {bad_rate}}}, "auth.keys[0].requests_per_minute"},
      {{{"keys", {bad_models}}}, "auth.keys[0].models[1]"},
      {{{"keys", {good, key_entry("a", "other", {"read"})}}}, "auth.keys[1].name"},
      {{{"keys", {good, key_entry("b", "ka", {"read"})}}}, "auth.keys[1].key_sha256"},
      {{{"audit_log", 5}}, "auth.audit_log"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.auth);
    EXPECT_EQ(message.rfind(std::string(c.path) + ": ", 0), 0u)
        << c.auth.dump() << " -> " << message;
  }
  EXPECT_EQ(error_of({{"keys", {good}}, {"audit_log", "/tmp/a.jsonl"}}), "");
  EXPECT_EQ(audit_log_path({{"audit_log", "/tmp/a.jsonl"}}), "/tmp/a.jsonl");
}

}  // namespace
}  // namespace lemon::auth
