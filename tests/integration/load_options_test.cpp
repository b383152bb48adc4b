// Load option priority (issue #2 §7.5): request > recipe_options.json > CLI >
// defaults, observed both in /health's recipe_options and in the argv the
// backend was started with; option changes reload atomically; router-owned
// llama-server flags are refused before anything is evicted.
#include <algorithm>
#include <future>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

class LoadOptionsTest : public RouterTest {
 protected:
  void SetUp() override {
    env_.add_llm("a");  // recipe_options.json: ctx_size 2048
    env_.add_llm("b");  // no saved options
    env_.write_recipe_options({{"user.a", {{"ctx_size", 2048}}}});
  }

  // recipe_options.ctx_size in /health and the value after --ctx-size in the
  // backend's argv, which must agree.
  int ctx_size_of(const std::string& model) {
    auto h = health(port());
    auto ctx = loaded_field(h, model, "recipe_options");
    if (!ctx.is_object() || !ctx["ctx_size"].is_number_integer()) {
      ADD_FAILURE() << model << " has no recipe_options.ctx_size: " << h.dump();
      return -1;
    }
    auto argv = fake_state(loaded_field(h, model, "backend_url"))["argv"];
    std::vector<std::string> args = argv.get<std::vector<std::string>>();
    auto it = std::find(args.begin(), args.end(), "--ctx-size");
    EXPECT_NE(it, args.end()) << argv.dump();
    if (it != args.end() && it + 1 != args.end()) {
      EXPECT_EQ(*(it + 1), std::to_string(ctx["ctx_size"].get<int>())) << argv.dump();
    }
    return ctx["ctx_size"].get<int>();
  }
};

TEST_F(LoadOptionsTest, TheRequestBeatsSavedOptionsAndTheCli) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "3000"}));
  HttpReply r = load(port(), "user.a", {{"ctx_size", 5000}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(ctx_size_of("user.a"), 5000);
}

TEST_F(LoadOptionsTest, SavedOptionsBeatTheCliAndChangingThemReloads) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "3000"}));
  ASSERT_EQ(load(port(), "user.a", {{"ctx_size", 5000}}).status, 200);
  const int first = loaded_pid(port(), "user.a");
  ASSERT_GT(first, 0);
  PidWatch first_watch(first);

  // Without ctx_size the layered value is recipe_options.json's 2048: a
  // different configuration, so a new server replaces the old one.
  HttpReply r = load(port(), "user.a");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(ctx_size_of("user.a"), 2048);
  const int second = loaded_pid(port(), "user.a");
  EXPECT_NE(second, first);
  EXPECT_TRUE(first_watch.wait_exit(kWait));
  EXPECT_EQ(router().count_log("starting user.a:"), 2);
}

TEST_F(LoadOptionsTest, ARequestDuringAReloadIsServedByTheNewServer) {
  const std::string a = env_.models_dir() + "/a.gguf";
  env_.write_sidecar(a, {{"startup_delay_ms", 1500}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "3000"}));
  ASSERT_EQ(load(port(), "user.a", {{"ctx_size", 5000}}).status, 200);
  const int old_pid = loaded_pid(port(), "user.a");

  auto reload = std::async(std::launch::async, [&] { return load(port(), "user.a"); });
  ASSERT_TRUE(router().wait_for_log("starting user.a:", 2));
  // The old server is gone and the new one is still starting: this request
  // must wait for the new server rather than fail.
  HttpReply r = chat(port(), "user.a", {{"max_tokens", 2}});
  EXPECT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(reload.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(reload.get().status, 200);
  auto h = health(port());
  EXPECT_NE(loaded_field(h, "user.a", "pid"), old_pid);
  EXPECT_EQ(loaded_field(h, "user.a", "recipe_options")["ctx_size"], 2048);
  EXPECT_EQ(fake_state(loaded_field(h, "user.a", "backend_url"))["requests"], 1);
  EXPECT_EQ(router().count_log("starting user.a:"), 2);
}

TEST_F(LoadOptionsTest, AModelWithoutSavedOptionsUsesTheCli) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "3000"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.b"));
  EXPECT_EQ(ctx_size_of("user.b"), 3000);
}

TEST_F(LoadOptionsTest, AutoLoadUsesSavedOptions) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "3000"}));
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  EXPECT_EQ(ctx_size_of("user.a"), 2048);
}

TEST_F(LoadOptionsTest, WithoutCliOrSavedOptionsTheDefaultApplies) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.b"));
  EXPECT_EQ(ctx_size_of("user.b"), 4096);
}

TEST_F(LoadOptionsTest, LoadingTheSameConfigurationTwiceIsANoOp) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "3000"}));
  pid_t first = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &first));
  pid_t second = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &second));
  EXPECT_EQ(first, second);
  ASSERT_EQ(load(port(), "user.a", {{"ctx_size", 2048}}).status, 200);  // same effective options
  EXPECT_EQ(loaded_pid(port(), "user.a"), first);
  EXPECT_EQ(router().count_log("starting user.a:"), 1);
}

TEST_F(LoadOptionsTest, ARouterOwnedLlamacppFlagIs400AndEvictsNothing) {
  ASSERT_NO_FATAL_FAILURE(start_router());  // one LLM slot
  pid_t a = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a", &a));

  // Loading b would evict a; reloading a would replace it. Neither happens.
  for (const char* model : {"user.b", "user.a"}) {
    HttpReply r = load(port(), model, {{"llamacpp_args", "--port 9"}});
    EXPECT_EQ(r.status, 400) << model << ": " << r.body;
    auto j = r.json();
    EXPECT_TRUE(is_error_envelope(j)) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find("--port"), std::string::npos) << r.body;
    auto h = health(port());
    EXPECT_EQ(loaded_names(h), (Names{"user.a"})) << model;
    EXPECT_EQ(loaded_field(h, "user.a", "pid"), a) << model;
  }
  EXPECT_EQ(router().count_log("starting "), 1);
  EXPECT_EQ(router().count_log("evicting"), 0);
}

TEST_F(LoadOptionsTest, UserLlamacppArgsReachTheBackend) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.b", {{"llamacpp_args", "--seed 42 --threads 2"}}).status, 200);
  auto h = health(port());
  EXPECT_EQ(loaded_field(h, "user.b", "recipe_options")["llamacpp_args"], "--seed 42 --threads 2");
  auto args =
      fake_state(loaded_field(h, "user.b", "backend_url"))["argv"].get<std::vector<std::string>>();
  auto seed = std::find(args.begin(), args.end(), "--seed");
  ASSERT_NE(seed, args.end());
  ASSERT_NE(seed + 1, args.end());
  EXPECT_EQ(*(seed + 1), "42");
  EXPECT_NE(std::find(args.begin(), args.end(), "--threads"), args.end());
}

}  // namespace
}  // namespace lemon::testing
