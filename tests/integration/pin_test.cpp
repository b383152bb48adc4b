// Pinned models (issue #29 §3, Lemonade HEAD's shape): "pinned" on POST
// /load, POST /internal/pin (also under /api/v1), and recipe_options.json's
// "pinned". A pinned model is passed over by the slot limit and memory
// admission; a load that could start only by evicting it gets 409
// slots_pinned_error (a slot) or 507 insufficient_memory (memory) and evicts
// nothing; only an explicit unload takes it.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using PinTest = RouterTest;
using Json = nlohmann::json;

TEST_F(PinTest, TheSlotLimitPassesOverAPinnedModel) {
  for (const char* key : {"m1", "m2", "m3"}) {
    env_.add_llm(key);
  }
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  auto pinned = load(port(), "user.m1", {{"pinned", true}});
  ASSERT_EQ(pinned.status, 200) << pinned.body;
  EXPECT_EQ(pinned.json()["pinned"], true);
  const int m1 = loaded_pid(port(), "user.m1");
  pid_t m2 = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.m2", &m2));
  ASSERT_EQ(chat(port(), "user.m2").status, 200);  // m1 is the least recently used
  PidWatch m2_watch(m2);

  ASSERT_NO_FATAL_FAILURE(load_ok("user.m3"));
  Json h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.m1", "user.m3"}));
  EXPECT_EQ(loaded_field(h, "user.m1", "pid"), m1);
  EXPECT_EQ(loaded_field(h, "user.m1", "pinned"), true);
  EXPECT_EQ(loaded_field(h, "user.m3", "pinned"), false);
  EXPECT_TRUE(m2_watch.wait_exit(kWait)) << "the unpinned model went instead";
}

TEST_F(PinTest, ALoadThatNeedsAPinnedSlotGets409AndEvictsNothing) {
  env_.add_llm("m1");
  env_.add_llm("m2");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  pid_t m1 = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.m1", &m1));
  auto pin = http_post(port(), "/internal/pin", Json{{"model_name", "user.m1"}, {"pinned", true}});
  ASSERT_EQ(pin.status, 200) << pin.body;
  EXPECT_EQ(pin.json(), (Json{{"status", "success"}, {"model_name", "user.m1"}, {"pinned", true}}));

  auto refused = load(port(), "user.m2");
  expect_error(refused, 409, "slots_pinned_error", "model", "an explicit load");
  EXPECT_NE(refused.json()["error"]["message"].get<std::string>().find("'user.m1'"),
            std::string::npos)
      << "names the pinned model: " << refused.body;
  expect_error(chat(port(), "user.m2"), 409, "slots_pinned_error", "model", "an auto-load");
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.m1"}));
  EXPECT_EQ(loaded_pid(port(), "user.m1"), m1) << "the pinned backend was never stopped";
  ASSERT_EQ(chat(port(), "user.m1").status, 200);

  // Unpinned (the route is also under /api/v1), it is evicted as usual.
  auto unpin =
      http_post(port(), "/api/v1/internal/pin", Json{{"model", "user.m1"}, {"pinned", false}});
  ASSERT_EQ(unpin.status, 200) << unpin.body;
  EXPECT_EQ(loaded_field(health(port()), "user.m1", "pinned"), false);
  PidWatch m1_watch(m1);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.m2"));
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.m2"}));
  EXPECT_TRUE(m1_watch.wait_exit(kWait));
}

TEST_F(PinTest, AnExplicitUnloadTakesAPinnedModel) {
  env_.add_llm("m1");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.m1", {{"pinned", true}}).status, 200);
  PidWatch watch(loaded_pid(port(), "user.m1"));
  ASSERT_EQ(http_post(port(), "/api/v1/unload", Json{{"model_name", "user.m1"}}).status, 200);
  EXPECT_TRUE(watch.wait_exit(kWait));
  EXPECT_TRUE(loaded_names(health(port())).empty());
  // Loaded again without a pin, it is not pinned: the pin lasted while it was loaded.
  ASSERT_NO_FATAL_FAILURE(load_ok("user.m1"));
  EXPECT_EQ(loaded_field(health(port()), "user.m1", "pinned"), false);
}

TEST_F(PinTest, ThePinRouteChecksItsBodyAndNeedsALoadedModel) {
  env_.add_llm("m1");
  ASSERT_NO_FATAL_FAILURE(start_router());
  expect_error(
      http_post(port(), "/internal/pin", Json{{"model_name", "user.m1"}, {"pinned", true}}), 404,
      "model_not_loaded", "model_name", "a model that is not loaded");
  ASSERT_NO_FATAL_FAILURE(load_ok("user.m1"));
  expect_error(http_post(port(), "/internal/pin", Json{{"model_name", "user.m1"}}), 400,
               "invalid_request_error", "pinned", "no 'pinned'");
  expect_error(
      http_post(port(), "/internal/pin", Json{{"model_name", "user.m1"}, {"pinned", "yes"}}), 400,
      "invalid_request_error", "pinned", "a 'pinned' that is not a boolean");
  expect_error(http_post(port(), "/internal/pin", Json{{"pinned", true}}), 400,
               "invalid_request_error", "model_name", "no model");
  expect_error(load(port(), "user.m1", {{"pinned", 1}}), 400, "invalid_request_error", "pinned",
               "a load's 'pinned' that is not a boolean");
  EXPECT_EQ(loaded_field(health(port()), "user.m1", "pinned"), false);
}

TEST_F(PinTest, ASavedPinPinsTheModelAtEveryLoad) {
  env_.add_llm("m1");
  env_.add_llm("m2");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  auto r = load(port(), "user.m1", {{"pinned", true}, {"save_options", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::ifstream in(env_.cache_dir() + "/recipe_options.json");
  auto saved = Json::parse(in);
  EXPECT_EQ(saved["user.m1"]["pinned"], true) << saved;

  // The catalogue shows it; an auto-load after an unload pins it again.
  ASSERT_EQ(http_post(port(), "/api/v1/unload", Json::object()).status, 200);
  auto models = http_get(port(), "/api/v1/models").json();
  bool listed = false;
  for (const auto& m : models["data"]) {
    if (m["id"] == "m1") {
      listed = true;
      EXPECT_EQ(m["pinned"], true) << m;
    } else if (m["id"] == "m2") {
      EXPECT_EQ(m["pinned"], false) << m;
    }
  }
  EXPECT_TRUE(listed) << models;
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.m1").json()["pinned"], true);
  ASSERT_EQ(chat(port(), "user.m1").status, 200);
  EXPECT_EQ(loaded_field(health(port()), "user.m1", "pinned"), true);
  expect_error(load(port(), "user.m2"), 409, "slots_pinned_error", "model",
               "a load that needs the saved pin's slot");
}

TEST_F(PinTest, MemoryAdmissionPassesOverAPinnedModel) {
  // Each model: 200 MiB of weights (sparse files), plus overhead; two fit in
  // 700 MiB, three do not.
  for (const char* key : {"a", "b", "c"}) {
    std::filesystem::resize_file(env_.add_llm(key), std::uintmax_t{200} * 1024 * 1024);
  }
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "8", "--memory-budget", "700M", "--memory-poll-interval", "3600"}));
  ASSERT_EQ(load(port(), "user.a", {{"pinned", true}}).status, 200);
  ASSERT_EQ(load(port(), "user.b").status, 200);
  ASSERT_EQ(chat(port(), "user.b").status, 200);  // a is the least recently used
  ASSERT_EQ(load(port(), "user.c").status, 200);
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a", "user.c"}))
      << "b went for memory, not the pinned a";
  // With c pinned too, nothing may go for b.
  ASSERT_EQ(
      http_post(port(), "/internal/pin", Json{{"model_name", "user.c"}, {"pinned", true}}).status,
      200);
  auto refused = load(port(), "user.b");
  expect_error(refused, 507, "insufficient_memory", "model", "memory held by pinned models");
  const std::string message = refused.json()["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("'user.a', 'user.c'"), std::string::npos) << message;
  EXPECT_NE(message.find("ram"), std::string::npos) << message;
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a", "user.c"}));
}

}  // namespace
}  // namespace lemon::testing
