// The context fitted to memory against the real router and the fake
// llama-server: ctx_size -1 (and --ctx-size auto) loads the largest context
// the memory budget leaves beside the models that stay loaded, up to the
// model's trained context, and says which and why in the /load answer and
// /health; ctx_size null skips the saved value for one load. The charges
// are the estimates (no memory poll runs in these tests): a tiny GGUF
// header gives 256 bytes of KV cache per token.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/gguf_writer.h"
#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using ContextFitTest = RouterTest;
using Json = nlohmann::json;
constexpr std::int64_t kFitMiB = std::int64_t{1024} * 1024;

// The value after `flag` in the fake's command line ("" when absent).
std::string fit_flag_value(const Json& state, const std::string& flag) {
  const auto argv = state.value("argv", std::vector<std::string>{});
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

Json fit_device_entry(const Json& health, const std::string& device) {
  for (const auto& d : health.value("devices", Json::array())) {
    if (d["device"] == device) {
      return d;
    }
  }
  return nullptr;
}

class FittedContext : public ContextFitTest {
 protected:
  // user.fit: a GGUF trained for 131072 tokens; user.other: 20 kFitMiB, no GGUF.
  void add_models() {
    const std::string fit = env_.make_model_file("fit.gguf");
    std::ofstream(fit, std::ios::binary) << tiny_llama_gguf(131072);
    env_.add_user_model("fit",
                        {{"checkpoint", fit}, {"recipe", "llamacpp"}, {"source", "local_path"}});
    const std::string other = env_.make_model_file("other.gguf");
    std::filesystem::resize_file(other, 20 * kFitMiB);
    env_.add_user_model("other",
                        {{"checkpoint", other}, {"recipe", "llamacpp"}, {"source", "local_path"}});
  }
};

TEST_F(FittedContext, TheLargestContextThatFitsBesideTheModelsThatStay) {
  add_models();
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "4", "--memory-budget", "240M", "--memory-poll-interval", "3600"}));
  ASSERT_EQ(load(port(), "user.other").status, 200);
  const HttpReply loaded = load(port(), "user.fit", {{"ctx_size", -1}});
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  const Json answer = Json::parse(loaded.body);
  ASSERT_TRUE(answer.contains("context_fit")) << answer.dump();
  EXPECT_EQ(answer["context_fit"]["reason"], "memory") << answer.dump();
  const int ctx = answer["ctx_size"].get<int>();
  EXPECT_EQ(answer["context_fit"]["ctx_size"], ctx);
  EXPECT_GT(ctx, 4096);
  EXPECT_LT(ctx, 131072);
  EXPECT_EQ(ctx % 256, 0);

  const Json h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.fit", "user.other"})) << "nothing was evicted for it";
  const Json entry = *loaded_entry(h, "user.fit");
  EXPECT_EQ(entry["slots"]["ctx_size"], ctx);
  EXPECT_EQ(entry["context_fit"], answer["context_fit"]);
  EXPECT_EQ(entry["recipe_options"]["ctx_size"], -1) << "its options still ask for a fit";
  EXPECT_EQ(fit_flag_value(fake_state(entry["backend_url"]), "--ctx-size"), std::to_string(ctx));
  // It fills the budget to within one step of the KV cache (256 tokens of
  // 256 bytes).
  const Json ram = fit_device_entry(h, "ram");
  ASSERT_TRUE(ram.is_object()) << h.dump();
  const std::int64_t used = ram["used_by_router"].get<std::int64_t>();
  const std::int64_t budget = ram["budget"].get<std::int64_t>();
  EXPECT_LE(used, budget);
  EXPECT_GT(used + 256 * 256, budget);

  // Loaded again with the same ask: the same server.
  const HttpReply again = load(port(), "user.fit", {{"ctx_size", -1}});
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(loaded_pid(port(), "user.fit"), entry["pid"].get<int>());
}

TEST_F(FittedContext, CtxSizeAutoOnTheCommandLineStopsAtTheTrainedContext) {
  add_models();
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--ctx-size", "auto", "--memory-budget", "8G", "--memory-poll-interval", "3600"}));
  const HttpReply loaded = load(port(), "user.fit");
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  const Json answer = Json::parse(loaded.body);
  EXPECT_EQ(answer["ctx_size"], 131072);
  EXPECT_EQ(answer["context_fit"]["reason"], "trained_context");
  const Json entry = *loaded_entry(health(port()), "user.fit");
  EXPECT_EQ(fit_flag_value(fake_state(entry["backend_url"]), "--ctx-size"), "131072");
}

TEST_F(FittedContext, ANullSkipsTheSavedValueForOneLoad) {
  add_models();
  env_.write_recipe_options({{"user.other", {{"ctx_size", 2048}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "8192"}));
  const HttpReply skipped =
      load(port(), "user.other", {{"ctx_size", nullptr}, {"save_options", true}});
  ASSERT_EQ(skipped.status, 200) << skipped.body;
  EXPECT_EQ(Json::parse(skipped.body)["ctx_size"], 8192) << "the router's value, not the saved one";
  EXPECT_FALSE(Json::parse(skipped.body).contains("context_fit"));
  const Json entry = *loaded_entry(health(port()), "user.other");
  EXPECT_EQ(fit_flag_value(fake_state(entry["backend_url"]), "--ctx-size"), "8192");
  // Saving with a null keeps the saved value.
  const HttpReply saved = load(port(), "user.other");
  ASSERT_EQ(saved.status, 200) << saved.body;
  EXPECT_EQ(Json::parse(saved.body)["ctx_size"], 2048);
}

}  // namespace
}  // namespace lemon::testing
