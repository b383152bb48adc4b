// Speculative decoding as a managed companion, against the
// real router and the fake llama-server: a model entry's checkpoints.draft
// reaches llama-server as -md with --spec-type draft-simple, is charged in
// the model's memory estimate, and its acceptance shows in /stats and the
// metrics; the `mtp` label gives Lemonade's MTP defaults, left out for an
// older llama-server; `speculative: false` turns it off for one load.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/prometheus_text.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using SpeculationTest = RouterTest;
using Json = nlohmann::json;
constexpr std::int64_t MiB = std::int64_t{1024} * 1024;

std::vector<std::string> argv_of(const Json& state) {
  return state.value("argv", std::vector<std::string>{});
}

bool has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

std::string spec_flag_value(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

class Speculation : public SpeculationTest {
 protected:
  // user.big (200 MiB) with a 64 MiB draft, user.plain (200 MiB) without.
  void add_models() {
    big_ = env_.make_model_file("big.gguf");
    draft_ = env_.make_model_file("draft.gguf");
    const std::string plain = env_.make_model_file("plain.gguf");
    std::filesystem::resize_file(big_, 200 * MiB);
    std::filesystem::resize_file(plain, 200 * MiB);
    std::filesystem::resize_file(draft_, 64 * MiB);
    env_.add_user_model("big", {{"checkpoints", {{"main", big_}, {"draft", draft_}}},
                                {"recipe", "llamacpp"},
                                {"source", "local_path"}});
    env_.add_user_model("plain",
                        {{"checkpoint", plain}, {"recipe", "llamacpp"}, {"source", "local_path"}});
  }
  std::string big_;
  std::string draft_;
};

TEST_F(Speculation, ADraftCheckpointIsPassedChargedAndMeasured) {
  add_models();
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "4", "--memory-budget", "8G", "--memory-poll-interval", "3600"}));
  ASSERT_EQ(load(port(), "user.big").status, 200);
  ASSERT_EQ(load(port(), "user.plain").status, 200);
  const Json h = health(port());
  const Json big = *loaded_entry(h, "user.big");
  const auto argv = argv_of(fake_state(big["backend_url"]));
  EXPECT_EQ(spec_flag_value(argv, "-md"), draft_);
  EXPECT_EQ(spec_flag_value(argv, "--spec-type"), "draft-simple");
  EXPECT_EQ(big["speculation"], (Json{{"draft", draft_}, {"mtp", false}}));
  EXPECT_FALSE(loaded_entry(h, "user.plain")->contains("speculation"));
  // The draft's weights (not a GGUF: its size) and compute buffers.
  const std::int64_t with = big["memory"]["estimate"]["ram"];
  const std::int64_t without = (*loaded_entry(h, "user.plain"))["memory"]["estimate"]["ram"];
  EXPECT_EQ(with - without, 64 * MiB + 32 * MiB);

  // llama-server's timings say how many drafted tokens it accepted.
  ASSERT_EQ(chat(port(), "user.big", {{"lemon_fake", {{"tokens", 8}}}}).status, 200);
  const Json stats = Json::parse(http_get(port(), "/api/v1/stats").body);
  EXPECT_EQ(stats["draft_tokens"], 8);
  EXPECT_EQ(stats["draft_accepted_tokens"], 6);
  EXPECT_DOUBLE_EQ(stats["draft_acceptance_rate"].get<double>(), 0.75);
  ASSERT_EQ(chat(port(), "user.plain").status, 200);
  const Json plain_stats = Json::parse(http_get(port(), "/api/v1/stats").body);
  EXPECT_EQ(plain_stats["draft_tokens"], 0);
  EXPECT_TRUE(plain_stats["draft_acceptance_rate"].is_null());
  std::string problem;
  const auto metrics = parse_prom_text(http_get(port(), "/metrics").body, &problem);
  ASSERT_TRUE(metrics) << problem;
  EXPECT_EQ(metrics->value("lemonade_draft_tokens_total", {{"model", "user.big"}}), 8.0);
  EXPECT_EQ(metrics->value("lemonade_draft_accepted_tokens_total", {{"model", "user.big"}}), 6.0);
  EXPECT_EQ(metrics->value("lemonade_draft_acceptance_ratio", {{"model", "user.big"}}), 0.75);
  EXPECT_FALSE(metrics->value("lemonade_draft_tokens_total", {{"model", "user.plain"}}));
}

TEST_F(Speculation, SpeculativeFalseLoadsWithoutTheDraft) {
  add_models();
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.big", {{"speculative", false}}).status, 200);
  const Json big = *loaded_entry(health(port()), "user.big");
  const auto argv = argv_of(fake_state(big["backend_url"]));
  EXPECT_FALSE(has(argv, "-md"));
  EXPECT_FALSE(has(argv, "--spec-type"));
  EXPECT_FALSE(big.contains("speculation"));
  // Asked again without the option: another server, with its draft.
  ASSERT_EQ(load(port(), "user.big").status, 200);
  const Json again = *loaded_entry(health(port()), "user.big");
  EXPECT_EQ(spec_flag_value(argv_of(fake_state(again["backend_url"])), "-md"), draft_);
}

TEST_F(Speculation, TheMtpLabelGetsLemonadesDefaultsThatArgsOverride) {
  const std::string path = env_.make_model_file("mtp.gguf");
  env_.add_user_model("mtp", {{"checkpoint", path},
                              {"recipe", "llamacpp"},
                              {"labels", {"mtp"}},
                              {"source", "local_path"}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.mtp", {{"llamacpp_args", "--spec-draft-n-max 5"}}).status, 200);
  const Json entry = *loaded_entry(health(port()), "user.mtp");
  const auto argv = argv_of(fake_state(entry["backend_url"]));
  EXPECT_EQ(spec_flag_value(argv, "--spec-type"), "draft-mtp");
  EXPECT_EQ(spec_flag_value(argv, "--spec-draft-p-min"), "0.75");
  EXPECT_EQ(spec_flag_value(argv, "--spec-draft-n-max"), "5");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--spec-draft-n-max"), 1);
  EXPECT_EQ(entry["speculation"], (Json{{"draft", nullptr}, {"mtp", true}}));
  ASSERT_EQ(chat(port(), "user.mtp", {{"lemon_fake", {{"tokens", 4}}}}).status, 200);
  EXPECT_EQ(Json::parse(http_get(port(), "/api/v1/stats").body)["draft_tokens"], 4);
}

TEST_F(Speculation, AnOlderLlamaServerLoadsWithTheFlagsItKnows) {
  add_models();
  const std::string path = env_.make_model_file("mtp.gguf");
  env_.add_user_model("mtp", {{"checkpoint", path},
                              {"recipe", "llamacpp"},
                              {"labels", {"mtp"}},
                              {"source", "local_path"}});
  // As the pinned b8175: --spec-type with n-gram types only, no --spec-draft-*
  // names; -md alone drafts there.
  ASSERT_NO_FATAL_FAILURE(
      start_router({}, {{"LEMON_FAKE_CONFIG",
                         Json{{"unknown_flags",
                               {"--spec-draft-model", "--spec-draft-n-max", "--spec-draft-n-min",
                                "--spec-draft-p-min", "--spec-draft-ngl", "draft-simple",
                                "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark"}}}
                             .dump()}}));
  ASSERT_EQ(load(port(), "user.big").status, 200);
  const auto argv = argv_of(fake_state((*loaded_entry(health(port()), "user.big"))["backend_url"]));
  EXPECT_EQ(spec_flag_value(argv, "-md"), draft_);
  EXPECT_FALSE(has(argv, "--spec-type"));
  ASSERT_EQ(chat(port(), "user.big").status, 200);
  EXPECT_GT(Json::parse(http_get(port(), "/api/v1/stats").body)["draft_tokens"].get<int>(), 0);
  // Its MTP is left out (and said so in the log); the model still loads.
  ASSERT_EQ(load(port(), "user.mtp").status, 200);
  const auto mtp_argv =
      argv_of(fake_state((*loaded_entry(health(port()), "user.mtp"))["backend_url"]));
  EXPECT_FALSE(has(mtp_argv, "--spec-type"));
  EXPECT_FALSE(has(mtp_argv, "--draft-max"));
}

}  // namespace
}  // namespace lemon::testing
