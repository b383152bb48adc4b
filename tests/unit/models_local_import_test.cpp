// register_local_import: which file of a copied folder becomes the model,
// the entry's shape (local_upload, paths relative to the hub cache), and the
// errors for an empty folder, a missing folder and bad fields.
#include <gtest/gtest.h>

#include "lemon/models/local_import.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

class LocalImport : public ::testing::Test {
 protected:
  fs::path hub() const { return t_.path(); }
  void put(const std::string& rel) { t_.write(rel); }
  Result<UserModelRegistration> import(const nlohmann::json& body,
                                       const std::string& name = "user.My") {
    return register_local_import(name, body, hub());
  }
  TempDir t_{"lemon-import"};
};

TEST_F(LocalImport, LlamacppPicksTheFirstGgufThatIsNotAProjector) {
  put("models--My/mmproj-a.gguf");
  put("models--My/q/b-Q4_0.gguf");
  put("models--My/q/c-Q8_0.gguf");
  put("models--My/README.md");
  auto reg = import({{"recipe", "llamacpp"}});
  ASSERT_TRUE(reg.ok()) << reg.error().message();
  EXPECT_EQ(reg->key, "My");
  EXPECT_EQ(reg->entry["checkpoint"], "models--My/q/b-Q4_0.gguf");
  EXPECT_EQ(reg->entry["source"], "local_upload");
  EXPECT_EQ(reg->entry["recipe"], "llamacpp");
  EXPECT_FALSE(reg->entry.contains("mmproj"));
  EXPECT_EQ(reg->entry["labels"], nlohmann::ordered_json::array({"custom"}));
}

TEST_F(LocalImport, VisionFindsTheProjectorRelativeToTheModelFile) {
  put("models--My/mmproj-f16.gguf");
  put("models--My/q/m.gguf");
  auto reg = import({{"recipe", "llamacpp"}, {"vision", true}});
  ASSERT_TRUE(reg.ok()) << reg.error().message();
  EXPECT_EQ(reg->entry["mmproj"], "../mmproj-f16.gguf");
  EXPECT_EQ(reg->entry["labels"], nlohmann::ordered_json::array({"custom", "vision"}));
}

TEST_F(LocalImport, NamedProjectorMustExist) {
  put("models--My/m.gguf");
  auto reg = import({{"recipe", "llamacpp"}, {"mmproj", "proj.gguf"}});
  ASSERT_FALSE(reg.ok());
  EXPECT_EQ(reg.error().param(), "mmproj");
}

TEST_F(LocalImport, EachRecipeFindsItsKindOfFile) {
  put("models--W/ggml-tiny.bin");
  put("models--S/sd.safetensors");
  put("models--R/model/genai_config.json");
  auto w = import({{"recipe", "whispercpp"}}, "user.W");
  auto s = import({{"recipe", "sd-cpp"}}, "user.S");
  auto r = import({{"recipe", "ryzenai-llm"}}, "user.R");
  ASSERT_TRUE(w.ok() && s.ok() && r.ok());
  EXPECT_EQ(w->entry["checkpoint"], "models--W/ggml-tiny.bin");
  EXPECT_EQ(s->entry["checkpoint"], "models--S/sd.safetensors");
  EXPECT_EQ(r->entry["checkpoint"], "models--R/model");
  EXPECT_NE(std::find(w->entry["labels"].begin(), w->entry["labels"].end(), "audio"),
            w->entry["labels"].end());
}

TEST_F(LocalImport, EmptyOrMissingFolderIsABadRequest) {
  put("models--My/notes.txt");
  auto empty = import({{"recipe", "llamacpp"}});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code(), ErrorCode::kInvalidRequest);
  auto missing = import({{"recipe", "llamacpp"}}, "user.Nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().param(), "local_import");
}

TEST_F(LocalImport, NameAndRecipeAreCheckedAsForARegistration) {
  put("models--My/m.gguf");
  EXPECT_EQ(import({{"recipe", "llamacpp"}}, "My").error().param(), "model_name");
  EXPECT_EQ(import({{"recipe", "nope"}}).error().param(), "recipe");
  EXPECT_EQ(import(nlohmann::json::object()).error().param(), "recipe");
}

}  // namespace
}  // namespace lemon
