// Lemonade 11's model names against the real router: canonical ids (a
// user model listed and accepted bare, "builtin.X", "X:latest"), reserved
// registration names, aliases (/internal/aliases), and recipe_options.json
// moved to canonical ids once, with the old file kept.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kBuiltin = "Qwen3-0.6B-GGUF";

class Lemonade11NamesTest : public RouterTest {
 protected:
  json listed_ids(const std::string& query = "") {
    json ids = json::array();
    const json listed = http_get(port(), "/api/v1/models" + query).json();
    for (const auto& m : listed["data"]) {
      ids.push_back(m["id"]);
    }
    return ids;
  }
  static bool has(const json& list, const std::string& id) {
    return std::find(list.begin(), list.end(), json(id)) != list.end();
  }
};

TEST_F(Lemonade11NamesTest, AUserModelIsListedBareAndReachedByEveryFormOfItsName) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const json ids = listed_ids();
  EXPECT_TRUE(has(ids, "a")) << ids;
  EXPECT_FALSE(has(ids, "user.a")) << ids;
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &pid));
  for (const char* name : {"a", "user.a", "a:latest", "user.a:latest"}) {
    HttpReply r = chat(port(), name);
    EXPECT_EQ(r.status, 200) << name << ": " << r.body;
  }
  EXPECT_EQ(health(port())["all_models_loaded"].size(), 1u)
      << "every form reached one server: " << health(port()).dump();
  EXPECT_EQ(loaded_pid(port(), "user.a"), pid);
  // GET models/{id} answers with the id as asked (9.4.1's clients ask for
  // "user.a" and check it; 11's ask for "a").
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.a").json()["id"], "user.a");
  EXPECT_EQ(http_get(port(), "/api/v1/models/a").json()["id"], "a");
  expect_error(chat(port(), "b"), 404, "model_not_found", "model", "an unknown bare name");
}

TEST_F(Lemonade11NamesTest, ABuiltinKeepsItsBareNameAndTheUserModelOfThatNameIsListedPrefixed) {
  env_.add_llm(kBuiltin);
  ASSERT_NO_FATAL_FAILURE(start_router());
  const json ids = listed_ids("?show_all=true");
  EXPECT_TRUE(has(ids, kBuiltin)) << ids;
  EXPECT_TRUE(has(ids, std::string("user.") + kBuiltin)) << ids;
  EXPECT_EQ(http_get(port(), std::string("/api/v1/models/builtin.") + kBuiltin).status, 200);
  auto builtin = http_get(port(), std::string("/api/v1/models/") + kBuiltin).json();
  EXPECT_EQ(builtin["checkpoint"], "unsloth/Qwen3-0.6B-GGUF:Q4_0")
      << "the bare name is the built-in";
  EXPECT_EQ(chat(port(), std::string("user.") + kBuiltin).status, 200);
  expect_error(chat(port(), "builtin.user.a"), 404, "model_not_found", "model",
               "builtin. names only built-ins");
}

TEST_F(Lemonade11NamesTest, RegistrationsUnderReservedPrefixesAreRefused) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (const char* name : {"builtin.x", "extra.x", "user.builtin.x", "user.extra.x"}) {
    HttpReply r = http_post(
        port(), "/api/v1/pull",
        json{{"model_name", name}, {"checkpoint", "org/x-GGUF:Q4_0"}, {"recipe", "llamacpp"}});
    expect_error(r, 400, "reserved_model_name", "model_name", name);
  }
  HttpReply source = http_post(port(), "/api/v1/pull",
                               json{{"model_name", "user.x"},
                                    {"checkpoint", "org/x-GGUF:Q4_0"},
                                    {"recipe", "llamacpp"},
                                    {"source", "modelscope"}});
  expect_error(source, 400, "invalid_request_error", "source", "an unsupported source");
  EXPECT_NE(source.body.find("Unsupported model source 'modelscope'"), std::string::npos)
      << source.body;
}

TEST_F(Lemonade11NamesTest, AnAliasIsANameOfItsOwnForAModel) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply set =
      http_post(port(), "/internal/aliases", json{{"alias", "fast:v2"}, {"target", "a"}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json(), (json{{"status", "ok"}, {"alias", "fast:v2"}, {"target", "a"}}));
  ASSERT_NO_FATAL_FAILURE(load_ok("fast:v2"));
  const int pid = loaded_pid(port(), "user.a");
  EXPECT_GT(pid, 1) << "the alias loaded user.a";
  EXPECT_EQ(chat(port(), "fast:v2").status, 200);
  EXPECT_EQ(loaded_pid(port(), "user.a"), pid) << "the alias reached user.a's server";
  auto listed = http_get(port(), "/internal/aliases").json()["aliases"];
  ASSERT_EQ(listed.size(), 1u) << listed;
  EXPECT_EQ(listed[0]["model"], "user.a");
  EXPECT_TRUE(has(listed_ids(), "fast:v2"));
  // A chain, and what may not be an alias.
  ASSERT_EQ(
      http_post(port(), "/api/v1/internal/aliases", json{{"alias", "faster"}, {"model", "fast:v2"}})
          .status,
      200);
  EXPECT_EQ(chat(port(), "faster").status, 200);
  expect_error(http_post(port(), "/internal/aliases", json{{"alias", "a"}, {"target", "faster"}}),
               409, "alias_conflict", "alias", "a model's own name");
  expect_error(http_post(port(), "/internal/aliases", json{{"alias", "user.z"}, {"target", "a"}}),
               400, "invalid_alias", "alias", "a reserved prefix");
  expect_error(http_post(port(), "/internal/aliases", json{{"alias", "z"}, {"target", "z"}}), 400,
               "invalid_alias", "alias", "itself");
  expect_error(
      http_post(port(), "/internal/aliases", json{{"alias", "fast:v2"}, {"target", "faster"}}), 409,
      "alias_conflict", "alias", "a loop");
  EXPECT_EQ(http_request(port(), "DELETE", "/internal/aliases/faster").status, 200);
  expect_error(http_request(port(), "DELETE", "/internal/aliases/faster"), 404, "alias_not_found",
               "alias", "gone");
  std::ifstream in(env_.cache_dir() + "/aliases.json");
  EXPECT_EQ(json::parse(in), (json{{"fast:v2", "a"}}));
}

TEST_F(Lemonade11NamesTest, SavedOptionsMoveToCanonicalIdsOnceAndTheOldFileIsKept) {
  env_.add_llm("a");
  const std::string path = env_.cache_dir() + "/recipe_options.json";
  fs::create_directories(env_.cache_dir());
  const std::string old_text = json{
      {kBuiltin, {{"ctx_size", 2048}}},
      {"user.a", {{"ctx_size", 1024}}},
      {"Gone-Model",
       {{"ctx_size", 512}}}}.dump(2);
  std::ofstream(path) << old_text;
  ASSERT_NO_FATAL_FAILURE(start_router());
  std::ifstream in(path);
  const json migrated = json::parse(in);
  EXPECT_EQ(migrated, (json{{std::string("builtin.") + kBuiltin, {{"ctx_size", 2048}}},
                            {"user.a", {{"ctx_size", 1024}}},
                            {"Gone-Model", {{"ctx_size", 512}}}}))
      << migrated.dump();
  std::ifstream kept(path + ".9.4.1");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), old_text);
  // The built-in still has its options, and a load of user.a uses its own.
  EXPECT_EQ(http_get(port(), std::string("/api/v1/models/") + kBuiltin)
                .json()["recipe_options"]["ctx_size"],
            2048);
  ASSERT_NO_FATAL_FAILURE(load_ok("a"));
  EXPECT_EQ(loaded_field(health(port()), "user.a", "recipe_options")["ctx_size"], 1024);
}

}  // namespace
}  // namespace lemon::testing
