// --extra-models-dir discovery: standalone files, folders, mmproj -> vision,
// shards, mmproj-only folders.
#include <gtest/gtest.h>

#include <filesystem>

#include "lemon/models/extra_models.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// File content of `n` bytes.
std::string bytes(std::size_t n) {
  return std::string(n, 'x');
}

const ModelInfo* by_name(const std::vector<ModelInfo>& list, const std::string& name) {
  for (const auto& m : list) {
    if (m.name == name) {
      return &m;
    }
  }
  return nullptr;
}

constexpr double kGb = 1024.0 * 1024.0 * 1024.0;

TEST(ModelsExtraModels, DiscoversFilesAndFolders) {
  TempDir t{"lemon-models"};
  fs::path single = t.write("Qwen3-8B-Q4_K_M.gguf", bytes(1000));
  t.write("MMPROJ-loose.gguf");
  t.write("notes.txt");
  fs::path gemma_main = t.write("gemma-3-4b-it-Q8_0/gemma-Q8_0.gguf", bytes(3000));
  fs::path gemma_proj = t.write("gemma-3-4b-it-Q8_0/mmproj-gemma-f16.gguf", bytes(500));
  fs::path shard1 = t.write("big/model-00001-of-00002.gguf", bytes(10));
  t.write("big/model-00002-of-00002.gguf", bytes(10));
  t.write("only-proj/mmproj.gguf");
  t.write("publisher/nested-model/nested.gguf");

  auto found = scan_extra_models_dir(t.path());
  std::vector<std::string> names;
  for (const auto& m : found) {
    names.push_back(m.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"extra.Qwen3-8B-Q4_K_M.gguf", "extra.big",
                                             "extra.gemma-3-4b-it-Q8_0", "extra.nested-model"}));

  const ModelInfo* q = by_name(found, "extra.Qwen3-8B-Q4_K_M.gguf");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->recipe, "llamacpp");
  EXPECT_EQ(q->labels, (std::vector<std::string>{"custom"}));
  EXPECT_TRUE(q->suggested);
  EXPECT_TRUE(q->downloaded);
  EXPECT_EQ(q->source, ModelSource::kExtraDir);
  EXPECT_EQ(q->type, ModelType::kLlm);
  EXPECT_EQ(q->resolved_path(), single.string());
  EXPECT_DOUBLE_EQ(q->size_gb, 1000 / kGb);

  const ModelInfo* g = by_name(found, "extra.gemma-3-4b-it-Q8_0");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->labels, (std::vector<std::string>{"custom", "vision"}));
  EXPECT_EQ(g->resolved_path(), gemma_main.string());
  EXPECT_EQ(g->resolved_path("mmproj"), gemma_proj.string());
  EXPECT_EQ(g->checkpoints.count("mmproj"), 1u);
  EXPECT_DOUBLE_EQ(g->size_gb, 3500 / kGb);
  EXPECT_TRUE(g->downloaded);

  const ModelInfo* big = by_name(found, "extra.big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->resolved_path(), shard1.string());
  EXPECT_EQ(big->resolved_path("mmproj"), "");
  EXPECT_DOUBLE_EQ(big->size_gb, 20 / kGb);
}

TEST(ModelsExtraModels, MissingOrEmptyDirFindsNothing) {
  TempDir t{"lemon-models"};
  EXPECT_TRUE(scan_extra_models_dir(t.path()).empty());
  EXPECT_TRUE(scan_extra_models_dir(t.path() / "absent").empty());
  EXPECT_TRUE(scan_extra_models_dir("").empty());
}

TEST(ModelsExtraModels, SameFolderNameTwiceKeepsTheFirst) {
  TempDir t{"lemon-models"};
  fs::path first = t.write("a/model/x.gguf");
  t.write("b/model/y.gguf");
  auto found = scan_extra_models_dir(t.path());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "extra.model");
  EXPECT_EQ(found[0].resolved_path(), first.string());
}

}  // namespace
}  // namespace lemon
