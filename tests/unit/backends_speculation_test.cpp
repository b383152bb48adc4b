// Speculative decoding: a llama.cpp model's draft model
// (checkpoints.draft, or -md in llamacpp_args) or its own multi-token
// prediction (the `mtp` label) on llama-server's command line, each flag a
// default llamacpp_args overrides, left out for a llama-server that does
// not know it; `speculative: false` turns it off; the draft's memory is
// part of the model's estimate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "lemon/backends/llama_server_flags.h"
#include "lemon/backends/llamacpp_server.h"
#include "lemon/backends/speculation.h"
#include "support/gguf_writer.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

using Args = std::vector<std::string>;
using nlohmann::json;
constexpr std::int64_t MiB = std::int64_t{1024} * 1024;

class Speculative : public ::testing::Test {
 protected:
  void SetUp() override {
    main_ = (dir_.path() / "main.gguf").string();
    draft_ = (dir_.path() / "draft.gguf").string();
    std::ofstream(main_, std::ios::binary) << testing::tiny_llama_gguf(2048, 1);
    std::ofstream(draft_, std::ios::binary) << testing::tiny_llama_gguf();
  }

  ModelInfo model(bool with_draft, bool mtp = false) const {
    ModelInfo info;
    info.name = "Test-GGUF";
    info.recipe = "llamacpp";
    info.checkpoints["main"] = "org/Test-GGUF:Q4_K_M";
    info.resolved_paths["main"] = main_;
    if (with_draft) {
      info.checkpoints["draft"] = "org/Draft-GGUF:Q8_0";
      info.resolved_paths["draft"] = draft_;
    }
    if (mtp) {
      info.labels = {"llamacpp", "mtp"};
    }
    info.downloaded = true;
    return info;
  }

  static RecipeOptions options(const json& j) {
    auto r = RecipeOptions::from_json("llamacpp", j);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok() ? *r : RecipeOptions{};
  }

  Args args_of(const ModelInfo& m, const json& opts) const {
    LlamaCppServer s(m, options(opts), env_);
    auto r = s.build_args(8123);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok() ? *r : Args{};
  }

  // The arguments after -ngl's value (where the router's own end and
  // speculation and the user's begin).
  static Args tail(const Args& args) {
    auto it = std::find(args.begin(), args.end(), "-ngl");
    return it == args.end() ? Args{} : Args(it + 2, args.end());
  }

  testing::TempDir dir_{"lemon-speculation"};
  std::string main_;
  std::string draft_;
  BackendEnvironment env_;
};

TEST_F(Speculative, ADraftCheckpointGivesMdAndDraftSimple) {
  EXPECT_EQ(tail(args_of(model(true), {{"llamacpp_backend", "cpu"}})),
            (Args{"-md", draft_, "--spec-type", "draft-simple"}));
  // On a GPU the draft runs where the model does.
  EXPECT_EQ(tail(args_of(model(true), {{"llamacpp_backend", "vulkan"}})),
            (Args{"-md", draft_, "-ngld", "99", "--spec-type", "draft-simple"}));
}

TEST_F(Speculative, TheMtpLabelGivesLemonadesDefaults) {
  EXPECT_EQ(
      tail(args_of(model(false, true), {{"llamacpp_backend", "cpu"}})),
      (Args{"--spec-type", "draft-mtp", "--spec-draft-n-max", "3", "--spec-draft-p-min", "0.75"}));
  // A draft file with the mtp label holds the MTP heads: drafted as MTP.
  EXPECT_EQ(tail(args_of(model(true, true), {{"llamacpp_backend", "cpu"}})),
            (Args{"-md", draft_, "--spec-type", "draft-mtp", "--spec-draft-n-max", "3",
                  "--spec-draft-p-min", "0.75"}));
}

TEST_F(Speculative, LlamacppArgsOverrideEachDefault) {
  EXPECT_EQ(
      tail(args_of(model(false, true),
                   {{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--spec-draft-n-max 8"}})),
      (Args{"--spec-type", "draft-mtp", "--spec-draft-p-min", "0.75", "--spec-draft-n-max", "8"}));
  EXPECT_EQ(tail(args_of(model(true), {{"llamacpp_backend", "cpu"},
                                       {"llamacpp_args", "--spec-type ngram-mod"}})),
            (Args{"-md", draft_, "--spec-type", "ngram-mod"}));
}

TEST_F(Speculative, SpeculativeFalseTurnsItOffForALoad) {
  const json off = {{"llamacpp_backend", "cpu"}, {"speculative", false}};
  EXPECT_EQ(tail(args_of(model(true, true), off)), Args{});
  LlamaCppServer s(model(true, true), options(off), env_);
  EXPECT_TRUE(s.speculation().is_null());
  EXPECT_EQ(s.speculation_bytes(4096), 0);
}

TEST_F(Speculative, ADraftInLlamacppArgsStaysAndGetsItsSpecType) {
  // Configurations from before checkpoints.draft keep working, and a
  // current llama-server is told to draft with it.
  const json opts = {{"llamacpp_backend", "cpu"}, {"llamacpp_args", "-md " + draft_}};
  EXPECT_EQ(tail(args_of(model(false), opts)),
            (Args{"--spec-type", "draft-simple", "-md", draft_}));
  LlamaCppServer s(model(false), options(opts), env_);
  EXPECT_EQ(s.speculation(), (json{{"draft", draft_}, {"mtp", false}}));
  EXPECT_GT(s.speculation_bytes(4096), 0) << "a draft named in llamacpp_args is charged too";
}

TEST_F(Speculative, ASecondDraftBesideTheCheckpointsIsRefused) {
  for (const char* flag : {"-md", "--model-draft", "--spec-draft-model"}) {
    LlamaCppServer s(
        model(true),
        options({{"llamacpp_backend", "cpu"}, {"llamacpp_args", std::string(flag) + " /x.gguf"}}),
        env_);
    auto r = s.build_args(8123);
    ASSERT_FALSE(r.ok()) << flag;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidUserArgs);
  }
}

TEST_F(Speculative, AnOlderLlamaServerGetsOnlyTheFlagsItKnows) {
  // As b8175 (the pinned release) words it: -md, --draft-max and a
  // --spec-type with n-gram types only.
  const auto old = LlamaServerFlags::from_help(
      "-m, --model FNAME   model path\n"
      "--port PORT\n"
      "-md, --model-draft FNAME   draft model\n"
      "--draft-max, --draft, --draft-n N   tokens to draft\n"
      "--draft-p-min P\n"
      "-ngld, --gpu-layers-draft N\n"
      "--spec-type [none|ngram-cache|ngram-simple|ngram-map-k|ngram-map-k4v|ngram-mod]\n");
  EXPECT_TRUE(old.knows("-md"));
  EXPECT_TRUE(old.knows("--spec-type"));
  EXPECT_TRUE(old.knows("ngram-mod"));
  EXPECT_FALSE(old.knows("draft-simple"));
  EXPECT_FALSE(old.knows("--spec-draft-n-max"));
  std::string left_out;
  Speculation draft{draft_, false, false};
  EXPECT_EQ(speculation_args(draft, {}, old, false, left_out), (Args{"-md", draft_}));
  EXPECT_TRUE(left_out.empty()) << "an old llama-server drafts with any -md";
  EXPECT_EQ(speculation_args(draft, {}, old, true, left_out), (Args{"-md", draft_, "-ngld", "99"}));
  // MTP (and the MTP heads' file with it) is left out, and said so.
  Speculation mtp{draft_, false, true};
  EXPECT_EQ(speculation_args(mtp, {}, old, false, left_out), Args{});
  EXPECT_NE(left_out.find("multi-token prediction"), std::string::npos) << left_out;
}

TEST_F(Speculative, ACurrentLlamaServersHelpListsItsFlagsAndTypes) {
  // As llama.cpp's common/arg.cpp prints them today.
  const auto now = LlamaServerFlags::from_help(
      "--port PORT                             port to listen (default: 8080)\n"
      "--spec-draft-model, -md, --model-draft FNAME   draft model for speculative decoding\n"
      "--spec-draft-n-max N                    number of tokens to draft\n"
      "--spec-draft-p-min, --draft-p-min P     minimum speculative decoding probability\n"
      "--spec-type none,draft-simple,draft-eagle3,draft-mtp,ngram-mod\n"
      "                                        comma-separated list of types\n");
  for (const char* word : {"-md", "--spec-draft-model", "--spec-draft-n-max", "--spec-draft-p-min",
                           "draft-simple", "draft-mtp"}) {
    EXPECT_TRUE(now.knows(word)) << word;
  }
  EXPECT_FALSE(now.knows("--draft-max"));
  std::string left_out;
  EXPECT_EQ(
      speculation_args(Speculation{"", false, true}, {}, now, false, left_out),
      (Args{"--spec-type", "draft-mtp", "--spec-draft-n-max", "3", "--spec-draft-p-min", "0.75"}));
  EXPECT_TRUE(left_out.empty()) << left_out;
}

TEST_F(Speculative, TheDraftIsChargedWithItsOwnKvForTheWholeContext) {
  const json opts = {{"llamacpp_backend", "cpu"}, {"ctx_size", 1000}, {"parallel", 2}};
  LlamaCppServer without(model(false), options(opts), env_);
  LlamaCppServer with(model(true), options(opts), env_);
  // The draft: 8,336 tensor bytes, 256 bytes of KV a token for the 2,000
  // tokens of context in all, and its compute floor.
  const std::int64_t draft = 8336 + 256 * 2000 + 32 * MiB;
  EXPECT_EQ(with.speculation_bytes(2000), draft);
  EXPECT_EQ(with.memory_estimate()["ram"] - without.memory_estimate()["ram"], draft);
  EXPECT_EQ(with.speculation(), (json{{"draft", "org/Draft-GGUF:Q8_0"}, {"mtp", false}}));
}

TEST_F(Speculative, MtpIsChargedTheKvOfItsPredictionLayers) {
  const json opts = {{"llamacpp_backend", "vulkan"}, {"ctx_size", 1000}};
  LlamaCppServer mtp(model(false, true), options(opts), env_);
  // One prediction layer of two: half the model's 256 bytes a token.
  EXPECT_EQ(mtp.speculation_bytes(1000), 128 * 1000 + 32 * MiB);
  EXPECT_EQ(mtp.memory_estimate().count("ram"), 1u);
  LlamaCppServer plain(model(false), options(opts), env_);
  EXPECT_EQ(mtp.memory_estimate()["gpu0"] - plain.memory_estimate()["gpu0"], 128 * 1000 + 32 * MiB)
      << "on the model's own device";
}

}  // namespace
}  // namespace lemon
