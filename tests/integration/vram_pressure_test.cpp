// Lemonade 11's GPU-pressure eviction under its names against the real
// router: auto_evict and auto_evict_threshold_pct in config.json, and POST
// /internal/simulate-vram-pressure, which unloads the least recently used
// idle, unpinned model when the fraction it names reaches the threshold
// with auto_evict on, and only for an admin.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class VramPressureTest : public RouterTest {
 protected:
  HttpReply simulate(double pct, const std::string& key = "") {
    HeaderList headers{{"Content-Type", "application/json"}};
    if (!key.empty()) {
      headers.emplace_back("Authorization", "Bearer " + key);
    }
    return url_request("http://127.0.0.1:" + std::to_string(port()), "POST",
                       "/internal/simulate-vram-pressure", json{{"pct", pct}}.dump(), headers);
  }
};

TEST_F(VramPressureTest, PressureAtTheThresholdUnloadsTheLeastRecentlyUsedIdleModel) {
  env_.add_llm("a");
  env_.add_llm("b");
  env_.add_llm("p");
  env_.write_config({{"auto_evict", true}, {"auto_evict_threshold_pct", 0.8}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "3"}, env_.config_env()));
  ASSERT_EQ(load(port(), "user.p", {{"pinned", true}}).status, 200);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.b"));
  ASSERT_EQ(chat(port(), "user.p").status, 200);  // p is used after a, but it is pinned anyway

  HttpReply below = simulate(0.5);
  ASSERT_EQ(below.status, 200) << below.body;
  EXPECT_EQ(below.json()["status"], "ok");
  EXPECT_TRUE(below.json()["unloaded"].empty()) << "below the threshold nothing happens";
  EXPECT_TRUE(loaded_entry(health(port()), "user.a").has_value());

  HttpReply at = simulate(0.85);
  ASSERT_EQ(at.status, 200) << at.body;
  EXPECT_EQ(at.json()["unloaded"], (json{"user.a"})) << "the least recently used idle one";
  EXPECT_TRUE(eventually([&] { return !loaded_entry(health(port()), "user.a").has_value(); }));
  EXPECT_EQ(simulate(0.9).json()["unloaded"], (json{"user.b"}));
  EXPECT_TRUE(simulate(1.0).json()["unloaded"].empty()) << "a pinned model stays";
  EXPECT_TRUE(eventually([&] { return !loaded_entry(health(port()), "user.b").has_value(); }));
  EXPECT_TRUE(loaded_entry(health(port()), "user.p").has_value());

  HttpReply bad = url_request("http://127.0.0.1:" + std::to_string(port()), "POST",
                              "/internal/simulate-vram-pressure", R"({"pct":"high"})",
                              {{"Content-Type", "application/json"}});
  expect_error(bad, 400, "invalid_request_error", "pct", "a pct that is no number");
}

TEST_F(VramPressureTest, WithoutAutoEvictNothingIsUnloaded) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  HttpReply r = simulate(1.0);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json()["unloaded"].empty());
  EXPECT_TRUE(loaded_entry(health(port()), "user.a").has_value());
}

TEST_F(VramPressureTest, OnlyAnAdminKeyMayCallIt) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--api-key", "k-user", "--admin-api-key", "k-admin", "--auto-evict"}, {}));
  EXPECT_EQ(simulate(1.0).status, 401) << "no key";
  EXPECT_EQ(simulate(1.0, "k-user").status, 403) << "a key without the admin scope";
  HttpReply admin = simulate(1.0, "k-admin");
  EXPECT_EQ(admin.status, 200) << admin.body;
}

}  // namespace
}  // namespace lemon::testing
