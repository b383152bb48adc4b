// Profiles against the real router (issue #30 §1): POST /internal/profile
// unloads what the profile lacks, loads its models with their options and
// pins, and /health names it; --profile switches at start; the profiles
// change with the configuration.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class ProfileTest : public RouterTest {
 protected:
  static json profiles() {
    return {{"work",
             {{"models", {"user.a", "user.b"}},
              {"pinned", {"user.a"}},
              {"options", {{"user.a", {{"ctx_size", 2048}}}}}}},
            {"night", {{"models", {"user.c"}}}}};
  }
  json pinned_of(const std::string& model) { return loaded_field(health(port()), model, "pinned"); }
};

TEST_F(ProfileTest, ASwitchLoadsTheProfileAndUnloadsTheRest) {
  for (const char* m : {"a", "b", "c"}) {
    env_.add_llm(m);
  }
  env_.write_config({{"profiles", profiles()}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "3"}, env_.config_env()));
  EXPECT_TRUE(health(port())["profile"].is_null());
  ASSERT_EQ(load(port(), "user.c").status, 200);

  HttpReply work = http_post(port(), "/internal/profile", json{{"name", "work"}});
  ASSERT_EQ(work.status, 200) << work.body;
  EXPECT_EQ(work.json()["status"], "success");
  EXPECT_EQ(work.json()["unloaded"], (json{"user.c"}));
  EXPECT_EQ(work.json()["loaded"], (json{"user.a", "user.b"}));
  const json h = health(port());
  EXPECT_EQ(h["profile"], "work");
  EXPECT_EQ(loaded_names(h), (Names{"user.a", "user.b"}));
  EXPECT_EQ(loaded_field(h, "user.a", "pinned"), true);
  EXPECT_EQ(loaded_field(h, "user.b", "pinned"), false);
  EXPECT_EQ(loaded_field(h, "user.a", "recipe_options")["ctx_size"], 2048) << h.dump();

  HttpReply night = http_post(port(), "/internal/profile", json{{"name", "night"}});
  ASSERT_EQ(night.status, 200) << night.body;
  EXPECT_EQ(loaded_names(health(port())), Names{"user.c"}) << "a pinned model goes too";
  EXPECT_EQ(health(port())["profile"], "night");

  HttpReply unknown = http_post(port(), "/internal/profile", json{{"name", "weekend"}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.json()["error"]["param"], "name");
  EXPECT_NE(unknown.json()["error"]["message"].get<std::string>().find("night, work"),
            std::string::npos)
      << unknown.body;
  EXPECT_EQ(health(port())["profile"], "night") << "a refused switch changes nothing";
}

TEST_F(ProfileTest, AModelThatFailsIsReportedAndTheRestLoad) {
  env_.add_llm("a");
  env_.add_missing_llm("b");
  env_.write_config({{"profiles", {{"work", {{"models", {"user.b", "user.a"}}}}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));
  HttpReply r = http_post(port(), "/internal/profile", json{{"name", "work"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "partial");
  EXPECT_TRUE(r.json()["failed"].contains("user.b")) << r.body;
  EXPECT_EQ(r.json()["loaded"], (json{"user.a"}));
  EXPECT_EQ(loaded_names(health(port())), Names{"user.a"});
}

TEST_F(ProfileTest, TheProfileFlagSwitchesAtStartAndTheProfilesFollowTheConfig) {
  env_.add_llm("a");
  env_.add_llm("c");
  env_.write_config({{"profiles", profiles()}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--profile", "night"}, env_.config_env()));
  EXPECT_TRUE(eventually([&] { return health(port())["profile"] == "night"; }));
  EXPECT_EQ(loaded_names(health(port())), Names{"user.c"});

  HttpReply set =
      http_post(port(), "/internal/set", json{{"profiles", {{"solo", {{"models", {"user.a"}}}}}}});
  ASSERT_EQ(set.status, 200) << set.body;
  HttpReply solo = http_post(port(), "/internal/profile", json{{"name", "solo"}});
  ASSERT_EQ(solo.status, 200) << solo.body;
  EXPECT_EQ(loaded_names(health(port())), Names{"user.a"});
}

TEST_F(ProfileTest, AnUnknownProfileOrABrokenSectionStopsTheStart) {
  env_.write_config({{"profiles", {{"w", {{"models", {"a"}}, {"pinned", {"b"}}}}}}});
  RouterProcess& broken = launch_router({"--port", "0"}, env_.config_env());
  auto exit = broken.wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 2);
  EXPECT_NE(broken.log_text().find("profiles.w.pinned[0]"), std::string::npos) << broken.log_text();

  env_.write_config(
      {{"profiles", {{"w", {{"models", {"a"}}, {"options", {{"a", {{"ctx-size", 8}}}}}}}}}});
  RouterProcess& misspelt = launch_router({"--port", "0"}, env_.config_env());
  exit = misspelt.wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 2);
  EXPECT_NE(misspelt.log_text().find("profiles.w.options.a.ctx-size"), std::string::npos)
      << misspelt.log_text();

  env_.write_config({{"profiles", profiles()}});
  RouterProcess& unknown =
      launch_router({"--port", "0", "--profile", "weekend"}, env_.config_env());
  exit = unknown.wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 2);
  EXPECT_NE(unknown.log_text().find("--profile weekend"), std::string::npos) << unknown.log_text();
}

TEST_F(ProfileTest, AProfileLargerThanTheLimitSaysWhatDidNotStay) {
  for (const char* m : {"a", "b"}) {
    env_.add_llm(m);
  }
  env_.write_config({{"profiles", {{"both", {{"models", {"user.a", "user.b"}}}}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}, env_.config_env()));
  HttpReply r = http_post(port(), "/internal/profile", json{{"name", "both"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "partial") << r.body;
  EXPECT_EQ(r.json()["loaded"], (json{"user.b"})) << r.body;
  EXPECT_TRUE(r.json()["failed"].contains("user.a")) << r.body;
}

}  // namespace
}  // namespace lemon::testing
