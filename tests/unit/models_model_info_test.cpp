// ModelInfo accessors and the /models object shape (to_api_json).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "lemon/models/model_info.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

ModelInfo vision_model() {
  ModelInfo info;
  info.name = "Gemma-3-4b-it-GGUF";
  info.recipe = "llamacpp";
  info.checkpoints = {{"main", "ggml-org/gemma-3-4b-it-GGUF:Q4_K_M"},
                      {"mmproj", "ggml-org/gemma-3-4b-it-GGUF:mmproj-model-f16.gguf"}};
  info.labels = {"vision"};
  info.size_gb = 3.61;
  info.suggested = true;
  info.saved_options = RecipeOptions::from_json("llamacpp", {{"ctx_size", 8192}}).value();
  return info;
}

TEST(ModelsModelInfo, Accessors) {
  ModelInfo info = vision_model();
  EXPECT_EQ(info.checkpoint(), "ggml-org/gemma-3-4b-it-GGUF:Q4_K_M");
  EXPECT_EQ(info.resolved_path(), "");
  info.resolved_paths["mmproj"] = "/x/mmproj.gguf";
  EXPECT_EQ(info.resolved_path("mmproj"), "/x/mmproj.gguf");
  EXPECT_EQ(ModelInfo().checkpoint(), "");
}

TEST(ModelsModelInfo, ApiJsonShapeForDownloadedModel) {
  TempDir t{"lemon-models"};
  fs::path main = t.write("model.gguf");
  const long long when = 1700000000;
  fs::last_write_time(main, std::chrono::file_clock::from_sys(
                                std::chrono::sys_seconds(std::chrono::seconds(when))));
  ModelInfo info = vision_model();
  info.downloaded = true;
  info.resolved_paths["main"] = main.string();

  json j = info.to_api_json();
  EXPECT_EQ(j["id"], "Gemma-3-4b-it-GGUF");
  EXPECT_EQ(j["object"], "model");
  EXPECT_EQ(j["created"], when);
  EXPECT_EQ(j["owned_by"], "lemonade");
  EXPECT_EQ(j["checkpoint"], "ggml-org/gemma-3-4b-it-GGUF:Q4_K_M");
  EXPECT_EQ(j["checkpoints"],
            (json{{"main", "ggml-org/gemma-3-4b-it-GGUF:Q4_K_M"},
                  {"mmproj", "ggml-org/gemma-3-4b-it-GGUF:mmproj-model-f16.gguf"}}));
  EXPECT_EQ(j["recipe"], "llamacpp");
  EXPECT_EQ(j["downloaded"], true);
  EXPECT_EQ(j["suggested"], true);
  EXPECT_EQ(j["labels"], json::array({"vision"}));
  EXPECT_EQ(j["recipe_options"], (json{{"ctx_size", 8192}}));
  EXPECT_EQ(j["size"], 3.61);
  EXPECT_FALSE(j.contains("image_defaults"));
  EXPECT_EQ(j.size(), 12u);
}

TEST(ModelsModelInfo, ApiJsonOmitsOptionalFields) {
  ModelInfo info;
  info.name = "m";
  info.recipe = "llamacpp";
  info.checkpoints = {{"main", "org/repo:Q4_0"}};
  json j = info.to_api_json();
  EXPECT_EQ(j["created"], 0);  // not downloaded
  EXPECT_FALSE(j.contains("checkpoints"));
  EXPECT_FALSE(j.contains("size"));
  EXPECT_EQ(j["labels"], json::array());
  EXPECT_EQ(j["recipe_options"], json::object());
  EXPECT_EQ(j["downloaded"], false);
  EXPECT_EQ(j["suggested"], false);

  // Downloaded but the file vanished since: created falls back to 0.
  info.downloaded = true;
  info.resolved_paths["main"] = "/nonexistent/lemon/model.gguf";
  EXPECT_EQ(info.to_api_json()["created"], 0);
}

TEST(ModelsModelInfo, ImageDefaultsOnlyForSdCpp) {
  ModelInfo info;
  info.name = "SD-Turbo";
  info.recipe = "sd-cpp";
  info.checkpoints = {{"main", "stabilityai/sd-turbo:sd_turbo.safetensors"}};
  info.image_defaults = {{"steps", 4}, {"cfg_scale", 1.0}, {"width", 512}, {"height", 512}};
  EXPECT_EQ(info.to_api_json()["image_defaults"], info.image_defaults);
  info.recipe = "llamacpp";
  EXPECT_FALSE(info.to_api_json().contains("image_defaults"));
}

}  // namespace
}  // namespace lemon
