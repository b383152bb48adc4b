// RecipeOptions: per-recipe keys, unset values, validation, defaults,
// inherit() and restricted_to().
#include <gtest/gtest.h>

#include <filesystem>

#include "lemon/models/recipe_options.h"

namespace lemon {
namespace {

using nlohmann::json;

TEST(ModelsRecipeOptions, KeysPerRecipe) {
  using V = std::vector<std::string>;
  EXPECT_EQ(RecipeOptions::keys_for_recipe("llamacpp"),
            (V{"ctx_size", "parallel", "llamacpp_backend", "llamacpp_args", "max_replicas", "gpu",
               "speculative"}));
  EXPECT_EQ(RecipeOptions::keys_for_recipe("flm"), (V{"ctx_size", "max_replicas"}));
  EXPECT_EQ(RecipeOptions::keys_for_recipe("ryzenai-llm"), (V{"ctx_size", "max_replicas"}));
  EXPECT_EQ(RecipeOptions::keys_for_recipe("oga-hybrid"), (V{"ctx_size", "max_replicas"}));
  EXPECT_EQ(RecipeOptions::keys_for_recipe("whispercpp"),
            (V{"whispercpp_backend", "max_replicas", "gpu"}));
  EXPECT_EQ(RecipeOptions::keys_for_recipe("sd-cpp"),
            (V{"sd-cpp_backend", "steps", "cfg_scale", "width", "height", "max_replicas", "gpu"}));
  EXPECT_TRUE(RecipeOptions::keys_for_recipe("kokoro").empty());
  EXPECT_EQ(RecipeOptions::all_keys().size(), 13u);
}

TEST(ModelsRecipeOptions, FromJsonKeepsOnlyRecipeKeysAndDropsUnset) {
  json in = {{"ctx_size", 8192}, {"llamacpp_backend", "cpu"},   {"llamacpp_args", ""},
             {"steps", 3},       {"whispercpp_backend", "npu"}, {"unknown", 1}};
  auto opts = RecipeOptions::from_json("llamacpp", in);
  ASSERT_TRUE(opts.ok()) << opts.error().message();
  EXPECT_EQ(opts->raw(), (json{{"ctx_size", 8192}, {"llamacpp_backend", "cpu"}}));
  EXPECT_EQ(opts->ctx_size(), 8192);
  EXPECT_EQ(opts->string_value("llamacpp_backend"), "cpu");
  EXPECT_EQ(opts->string_value("llamacpp_args"), "");
  EXPECT_FALSE(opts->has("llamacpp_args"));

  auto unset = RecipeOptions::from_json(
      "llamacpp", json{{"ctx_size", nullptr}, {"parallel", -1}, {"llamacpp_args", ""}});
  ASSERT_TRUE(unset.ok());
  EXPECT_TRUE(unset->raw().empty());
  EXPECT_EQ(unset->ctx_size(1234), 1234);
}

TEST(ModelsRecipeOptions, CtxSizeMinusOneOrAutoAsksForTheContextFittedToMemory) {
  for (const json& asked : {json(-1), json("auto")}) {
    auto fitted = RecipeOptions::from_json("llamacpp", json{{"ctx_size", asked}});
    ASSERT_TRUE(fitted.ok()) << asked.dump();
    EXPECT_EQ(fitted->raw(), (json{{"ctx_size", -1}})) << "Lemonade 11's form";
    EXPECT_TRUE(fitted->fitted_context());
    EXPECT_EQ(fitted->ctx_size(1234), 1234);
    // A value of its own: it wins over a lower layer's size, and a lower
    // layer's -1 fills an unset one.
    auto saved = RecipeOptions::from_json("llamacpp", json{{"ctx_size", 8192}}).value();
    EXPECT_TRUE(fitted->inherit(saved).fitted_context());
    EXPECT_TRUE(RecipeOptions().inherit(*fitted).fitted_context());
    EXPECT_FALSE(saved.inherit(*fitted).fitted_context());
  }
  EXPECT_FALSE(RecipeOptions::from_json("llamacpp", json{{"ctx_size", "big"}}).ok());
}

TEST(ModelsRecipeOptions, EmptyRecipeKeepsEveryKnownKey) {
  json in = {{"ctx_size", 100}, {"steps", 5}, {"whispercpp_backend", "vulkan"}, {"bogus", 1}};
  auto opts = RecipeOptions::from_json("", in);
  ASSERT_TRUE(opts.ok());
  EXPECT_EQ(opts->raw(), (json{{"ctx_size", 100}, {"steps", 5}, {"whispercpp_backend", "vulkan"}}));
}

TEST(ModelsRecipeOptions, ValueOfAnotherRecipeIsNotValidated) {
  // sd-cpp keys are dropped for llamacpp, so their values do not matter.
  auto opts = RecipeOptions::from_json("llamacpp", json{{"steps", "many"}});
  ASSERT_TRUE(opts.ok());
  EXPECT_TRUE(opts->raw().empty());
}

void expect_invalid(std::string_view recipe, const json& in, const std::string& key) {
  auto opts = RecipeOptions::from_json(recipe, in);
  ASSERT_FALSE(opts.ok()) << in.dump();
  EXPECT_EQ(opts.error().code(), ErrorCode::kInvalidOption);
  EXPECT_EQ(opts.error().param(), key);
  EXPECT_NE(opts.error().message().find(key), std::string::npos) << opts.error().message();
}

TEST(ModelsRecipeOptions, ValidationNamesTheKey) {
  expect_invalid("llamacpp", {{"ctx_size", 0}}, "ctx_size");
  expect_invalid("llamacpp", {{"ctx_size", -5}}, "ctx_size");
  expect_invalid("llamacpp", {{"ctx_size", "4096"}}, "ctx_size");
  expect_invalid("llamacpp", {{"ctx_size", 4096.5}}, "ctx_size");
  expect_invalid("llamacpp", {{"ctx_size", 1ull << 40}}, "ctx_size");
  expect_invalid("llamacpp", {{"llamacpp_backend", "cuda"}}, "llamacpp_backend");
  expect_invalid("llamacpp", {{"llamacpp_backend", 3}}, "llamacpp_backend");
  expect_invalid("llamacpp", {{"llamacpp_args", json::array()}}, "llamacpp_args");
  expect_invalid("whispercpp", {{"whispercpp_backend", "rocm"}}, "whispercpp_backend");
  expect_invalid("sd-cpp", {{"sd-cpp_backend", "vulkan"}}, "sd-cpp_backend");
  expect_invalid("sd-cpp", {{"steps", 0}}, "steps");
  expect_invalid("sd-cpp", {{"width", "512"}}, "width");
  expect_invalid("sd-cpp", {{"height", 1.5}}, "height");
  expect_invalid("sd-cpp", {{"cfg_scale", "high"}}, "cfg_scale");
  expect_invalid("flm", {{"ctx_size", true}}, "ctx_size");
  // Values parsed from JSON text (non-negative integers parse as unsigned).
  expect_invalid("llamacpp", json::parse(R"({"ctx_size": 0})"), "ctx_size");
  expect_invalid("sd-cpp", json::parse(R"({"width": 0})"), "width");
  expect_invalid("llamacpp", json::parse(R"({"ctx_size": 3000000000})"), "ctx_size");
  auto parsed = RecipeOptions::from_json("llamacpp", json::parse(R"({"ctx_size": 2048})"));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->ctx_size(), 2048);
}

TEST(ModelsRecipeOptions, NonObjectIsInvalidAndNullIsEmpty) {
  auto bad = RecipeOptions::from_json("llamacpp", json::array());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidOption);
  auto null = RecipeOptions::from_json("llamacpp", json());
  ASSERT_TRUE(null.ok());
  EXPECT_TRUE(null->raw().empty());
}

TEST(ModelsRecipeOptions, AcceptsValidValues) {
  auto sd = RecipeOptions::from_json(
      "sd-cpp", {{"sd-cpp_backend", "rocm"}, {"steps", 4}, {"cfg_scale", 1}, {"width", 1024}});
  ASSERT_TRUE(sd.ok()) << sd.error().message();
  EXPECT_EQ(sd->raw()["cfg_scale"], 1.0);
  EXPECT_TRUE(sd->raw()["cfg_scale"].is_number_float());
  EXPECT_EQ(sd->string_value("steps"), "4");
  for (const auto& b : valid_llamacpp_backends()) {
    EXPECT_TRUE(RecipeOptions::from_json("llamacpp", {{"llamacpp_backend", b}}).ok()) << b;
  }
  EXPECT_EQ(valid_whispercpp_backends(), (std::vector<std::string>{"cpu", "npu", "vulkan"}));
  EXPECT_EQ(valid_sdcpp_backends(), (std::vector<std::string>{"cpu", "rocm"}));
}

TEST(ModelsRecipeOptions, Defaults) {
  auto d = RecipeOptions::defaults();
  EXPECT_EQ(d.ctx_size(), 4096);
  std::error_code ec;
  std::string expected_backend =
      std::filesystem::exists("/dev/dri/renderD128", ec) ? "vulkan" : "cpu";
  EXPECT_EQ(d.string_value("llamacpp_backend"), expected_backend);
  EXPECT_EQ(d.string_value("llamacpp_args"), "");
  EXPECT_EQ(d.string_value("whispercpp_backend"), "cpu");
  EXPECT_EQ(d.string_value("sd-cpp_backend"), "cpu");
  EXPECT_EQ(d.raw()["steps"], 20);
  EXPECT_EQ(d.raw()["cfg_scale"], 7.0);
  EXPECT_EQ(d.raw()["width"], 512);
  EXPECT_EQ(d.raw()["height"], 512);
}

TEST(ModelsRecipeOptions, InheritTakesOnlyUnsetKeysFromLower) {
  auto request = RecipeOptions::from_json("llamacpp", {{"ctx_size", 1024}}).value();
  auto saved =
      RecipeOptions::from_json("llamacpp", {{"ctx_size", 2048}, {"llamacpp_args", "-np 2"}})
          .value();
  auto merged = request.inherit(saved).inherit(RecipeOptions::defaults());
  EXPECT_EQ(merged.ctx_size(), 1024);
  EXPECT_EQ(merged.string_value("llamacpp_args"), "-np 2");
  EXPECT_EQ(merged.string_value("whispercpp_backend"), "cpu");  // not restricted
  auto only_llama = merged.restricted_to("llamacpp");
  EXPECT_EQ(only_llama.raw().size(), 4u);
  EXPECT_FALSE(only_llama.has("steps"));
  EXPECT_TRUE(merged.restricted_to("kokoro").raw().empty());
  EXPECT_EQ(merged.restricted_to("whispercpp").raw(), (json{{"whispercpp_backend", "cpu"}}));
}

TEST(ModelsRecipeOptions, ParallelIsAPositiveSlotCountWithACap) {
  auto two = RecipeOptions::from_json("llamacpp", {{"parallel", 2}});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->int_value("parallel", 1), 2);
  EXPECT_EQ(RecipeOptions::defaults().int_value("parallel", 0), 1);
  for (const json& bad : {json(0), json(-3), json(kMaxParallel + 1), json("4"), json(1.5)}) {
    auto r = RecipeOptions::from_json("llamacpp", {{"parallel", bad}});
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidOption);
    EXPECT_EQ(r.error().param(), "parallel");
  }
  // Other recipes have no slots: the key is dropped, not refused.
  EXPECT_FALSE(RecipeOptions::from_json("flm", {{"parallel", 2}})->has("parallel"));
}

TEST(ModelsRecipeOptions, EqualityComparesValues) {
  auto a = RecipeOptions::from_json("flm", {{"ctx_size", 10}}).value();
  auto b = RecipeOptions::from_json("", {{"ctx_size", 10}}).value();
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == RecipeOptions());
}

}  // namespace
}  // namespace lemon
