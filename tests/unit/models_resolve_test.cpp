// resolve_model_files: per recipe and source, what is resolved, what is
// reported missing, and when a model counts as downloaded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lemon/models/model_files.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A hub cache under <tmp>/hub with helpers to lay out repositories.
class ModelsResolve : public ::testing::Test {
 protected:
  fs::path hub() const { return tree_.path() / "hub"; }
  // Creates snapshots/<sha> of `repo` and points refs/main at it.
  fs::path snapshot(const std::string& repo, const std::string& sha = "abc123") const {
    std::string dir = "models--" + repo;
    dir.replace(dir.find('/'), 1, "--");
    fs::path snap = hub() / dir / "snapshots" / sha;
    fs::create_directories(snap);
    tree_.write(fs::path("hub") / dir / "refs" / "main", sha);
    return snap;
  }
  static void touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "data";
  }
  ModelInfo model(const std::string& recipe, std::map<std::string, std::string> checkpoints,
                  ModelSource source = ModelSource::kBuiltIn) const {
    ModelInfo info;
    info.name = "test-model";
    info.recipe = recipe;
    info.checkpoints = std::move(checkpoints);
    info.source = source;
    return info;
  }
  ModelInfo resolved(ModelInfo info) const {
    resolve_model_files(info, ResolveContext{hub(), std::nullopt});
    return info;
  }

  TempDir tree_{"lemon-models"};
};

TEST_F(ModelsResolve, LlamacppVariantFound) {
  fs::path snap = snapshot("org/repo");
  touch(snap / "Model-Q4_0.gguf");
  touch(snap / "Model-Q8_0.gguf");
  auto info = resolved(model("llamacpp", {{"main", "org/repo:Q8_0"}}));
  EXPECT_TRUE(info.downloaded);
  EXPECT_EQ(info.resolved_path(), (snap / "Model-Q8_0.gguf").string());
  EXPECT_TRUE(info.missing_paths.empty());
}

TEST_F(ModelsResolve, RequestedVariantAbsentIsNotDownloadedAndNeverFallsBack) {
  fs::path snap = snapshot("org/repo");
  touch(snap / "Model-Q4_0.gguf");
  auto info = resolved(model("llamacpp", {{"main", "org/repo:Q8_0"}}));
  EXPECT_FALSE(info.downloaded);
  EXPECT_EQ(info.resolved_path(), "");
  EXPECT_EQ(info.missing_paths, (std::vector<std::string>{snap.string() + "/*Q8_0.gguf"}));
}

TEST_F(ModelsResolve, RepoWithoutGgufNeverResolvesToTheRepoDir) {
  fs::path snap = snapshot("org/repo");
  touch(snap / "README.md");
  auto info = resolved(model("llamacpp", {{"main", "org/repo"}}));
  EXPECT_FALSE(info.downloaded);
  EXPECT_TRUE(info.resolved_paths.empty());
  EXPECT_EQ(info.missing_paths, (std::vector<std::string>{snap.string() + "/*.gguf"}));
}

TEST_F(ModelsResolve, AmbiguousVariantIsNotResolved) {
  fs::path snap = snapshot("org/repo");
  touch(snap / "a/Model-Q4_0.gguf");
  touch(snap / "b/Model-Q4_0.gguf");
  auto info = resolved(model("llamacpp", {{"main", "org/repo:Q4_0"}}));
  EXPECT_FALSE(info.downloaded);
  EXPECT_EQ(info.resolved_path(), "");
  ASSERT_EQ(info.missing_paths.size(), 1u);
  EXPECT_EQ(info.missing_paths[0].rfind(snap.string() + "/*Q4_0.gguf (ambiguous", 0), 0u)
      << info.missing_paths[0];
}

TEST_F(ModelsResolve, ShardedFolderVariant) {
  fs::path snap = snapshot("unsloth/gpt-oss-120b-GGUF");
  touch(snap / "Q4_K_M/gpt-oss-120b-Q4_K_M-00001-of-00002.gguf");
  auto ckpt = std::map<std::string, std::string>{{"main", "unsloth/gpt-oss-120b-GGUF:Q4_K_M"}};
  auto half = resolved(model("llamacpp", ckpt));
  EXPECT_FALSE(half.downloaded);
  EXPECT_EQ(half.missing_paths,
            (std::vector<std::string>{
                (snap / "Q4_K_M/gpt-oss-120b-Q4_K_M-00002-of-00002.gguf").string()}));
  touch(snap / "Q4_K_M/gpt-oss-120b-Q4_K_M-00002-of-00002.gguf");
  auto full = resolved(model("llamacpp", ckpt));
  EXPECT_TRUE(full.downloaded);
  EXPECT_EQ(full.resolved_path(),
            (snap / "Q4_K_M/gpt-oss-120b-Q4_K_M-00001-of-00002.gguf").string());
}

TEST_F(ModelsResolve, MissingRepoNamesTheRepoDir) {
  auto info = resolved(model("llamacpp", {{"main", "org/absent:Q4_0"}}));
  EXPECT_FALSE(info.downloaded);
  EXPECT_EQ(info.missing_paths,
            (std::vector<std::string>{(hub() / "models--org--absent").string()}));
}

TEST_F(ModelsResolve, RefsMainSnapshotIsTheOneLookedAt) {
  fs::path old_snap = snapshot("org/repo", "old");
  touch(old_snap / "Model-Q4_0.gguf");
  fs::path new_snap = snapshot("org/repo", "new");  // refs/main -> new
  touch(new_snap / "Model-Q8_0.gguf");
  EXPECT_FALSE(resolved(model("llamacpp", {{"main", "org/repo:Q4_0"}})).downloaded);
  EXPECT_TRUE(resolved(model("llamacpp", {{"main", "org/repo:Q8_0"}})).downloaded);
}

TEST_F(ModelsResolve, ManifestMeansIncomplete) {
  fs::path snap = snapshot("org/repo");
  touch(snap / "Model-Q4_0.gguf");
  touch(snap / ".download_manifest.json");
  auto info = resolved(model("llamacpp", {{"main", "org/repo:Q4_0"}}));
  EXPECT_FALSE(info.downloaded);
  ASSERT_EQ(info.missing_paths.size(), 1u);
  EXPECT_NE(info.missing_paths[0].find(".download_manifest.json"), std::string::npos);
}

TEST_F(ModelsResolve, PartialSiblingMeansIncomplete) {
  fs::path snap = snapshot("org/repo");
  touch(snap / "Model-Q4_0.gguf");
  touch(snap / "Model-Q4_0.gguf.partial");
  auto info = resolved(model("llamacpp", {{"main", "org/repo:Model-Q4_0.gguf"}}));
  EXPECT_FALSE(info.downloaded);
  ASSERT_EQ(info.missing_paths.size(), 1u);
  EXPECT_NE(info.missing_paths[0].find("Model-Q4_0.gguf.partial"), std::string::npos);
}

TEST_F(ModelsResolve, SymlinksIntoBlobsAreFollowedAndDanglingOnesAreMissing) {
  fs::path snap = snapshot("org/repo");
  fs::path blobs = snap.parent_path().parent_path() / "blobs";
  touch(blobs / "sha256-q4");
  fs::create_symlink("../../blobs/sha256-q4", snap / "Model-Q4_0.gguf");
  fs::create_symlink("../../blobs/sha256-q8", snap / "Model-Q8_0.gguf");  // blob absent
  auto q4 = resolved(model("llamacpp", {{"main", "org/repo:Q4_0"}}));
  EXPECT_TRUE(q4.downloaded);
  EXPECT_EQ(q4.resolved_path(), (snap / "Model-Q4_0.gguf").string());
  auto q8 = resolved(model("llamacpp", {{"main", "org/repo:Q8_0"}}));
  EXPECT_FALSE(q8.downloaded);
  ASSERT_EQ(q8.missing_paths.size(), 1u);
  EXPECT_EQ(q8.missing_paths[0], (snap / "Model-Q8_0.gguf").string() + " (dangling symlink)");
}

TEST_F(ModelsResolve, LlamacppMmprojIsRequired) {
  fs::path snap = snapshot("org/vl");
  touch(snap / "vl-Q4_K_M.gguf");
  auto ckpts = std::map<std::string, std::string>{{"main", "org/vl:Q4_K_M"},
                                                  {"mmproj", "org/vl:mmproj-f16.gguf"}};
  auto without = resolved(model("llamacpp", ckpts));
  EXPECT_FALSE(without.downloaded);
  EXPECT_EQ(without.missing_paths, (std::vector<std::string>{(snap / "mmproj-f16.gguf").string()}));
  EXPECT_EQ(without.resolved_path("main"), (snap / "vl-Q4_K_M.gguf").string());

  touch(snap / "mmproj-f16.gguf");
  auto with = resolved(model("llamacpp", ckpts));
  EXPECT_TRUE(with.downloaded);
  EXPECT_EQ(with.resolved_path("mmproj"), (snap / "mmproj-f16.gguf").string());
}

TEST_F(ModelsResolve, LlamacppDraftIsRequiredAndFollowsTheVariantRules) {
  // Lemonade 11's checkpoints.draft: a GGUF by variant (or file name),
  // in its own repository or the model's.
  fs::path main = snapshot("org/big");
  fs::path small = snapshot("org/small");
  touch(main / "big-Q4_K_M.gguf");
  auto ckpts =
      std::map<std::string, std::string>{{"main", "org/big:Q4_K_M"}, {"draft", "org/small:Q8_0"}};
  auto without = resolved(model("llamacpp", ckpts));
  EXPECT_FALSE(without.downloaded);
  EXPECT_EQ(without.missing_paths, (std::vector<std::string>{(small / "*Q8_0.gguf").string()}));

  touch(small / "small-Q8_0.gguf");
  touch(small / "small-Q4_0.gguf");
  auto with = resolved(model("llamacpp", ckpts));
  EXPECT_TRUE(with.downloaded);
  EXPECT_EQ(with.resolved_path("draft"), (small / "small-Q8_0.gguf").string());

  touch(main / "mtp-big.gguf");
  auto by_file =
      resolved(model("llamacpp", {{"main", "org/big:Q4_K_M"}, {"draft", "org/big:mtp-big.gguf"}}));
  EXPECT_TRUE(by_file.downloaded);
  EXPECT_EQ(by_file.resolved_path("draft"), (main / "mtp-big.gguf").string());
  EXPECT_EQ(by_file.resolved_path("main"), (main / "big-Q4_K_M.gguf").string());
}

TEST_F(ModelsResolve, WhisperNpuCacheIsOptional) {
  fs::path snap = snapshot("ggerganov/whisper.cpp");
  touch(snap / "ggml-tiny.bin");
  auto ckpts = std::map<std::string, std::string>{
      {"main", "ggerganov/whisper.cpp:ggml-tiny.bin"},
      {"npu_cache", "amd/whisper-tiny-onnx-npu:ggml-tiny-encoder-vitisai.rai"}};
  auto info = resolved(model("whispercpp", ckpts));
  EXPECT_TRUE(info.downloaded);
  EXPECT_TRUE(info.missing_paths.empty());
  EXPECT_EQ(info.resolved_path(), (snap / "ggml-tiny.bin").string());
  EXPECT_EQ(info.resolved_path("npu_cache"), "");

  touch(snapshot("amd/whisper-tiny-onnx-npu") / "ggml-tiny-encoder-vitisai.rai");
  auto with_cache = resolved(model("whispercpp", ckpts));
  EXPECT_NE(with_cache.resolved_path("npu_cache"), "");
}

TEST_F(ModelsResolve, SdCppExtraRolesAreExactFilesInTheirOwnRepos) {
  touch(snapshot("bfl/flux") / "flux.safetensors");
  touch(snapshot("comfy/enc") / "split_files/text_encoders/qwen.safetensors");
  auto ckpts = std::map<std::string, std::string>{
      {"main", "bfl/flux:flux.safetensors"},
      {"text_encoder", "comfy/enc:split_files/text_encoders/qwen.safetensors"},
      {"vae", "comfy/enc:split_files/vae/ae.safetensors"}};
  auto info = resolved(model("sd-cpp", ckpts));
  EXPECT_FALSE(info.downloaded);
  ASSERT_EQ(info.missing_paths.size(), 1u);
  EXPECT_NE(info.missing_paths[0].find("split_files/vae/ae.safetensors"), std::string::npos);
  EXPECT_NE(info.resolved_path("text_encoder"), "");

  touch(snapshot("comfy/enc") / "split_files/vae/ae.safetensors");
  EXPECT_TRUE(resolved(model("sd-cpp", ckpts)).downloaded);
}

TEST_F(ModelsResolve, RyzenAiResolvesToTheGenaiConfigDirectory) {
  fs::path snap = snapshot("amd/onnx-model");
  touch(snap / "README.md");
  auto missing = resolved(model("ryzenai-llm", {{"main", "amd/onnx-model"}}));
  EXPECT_FALSE(missing.downloaded);
  EXPECT_EQ(missing.missing_paths,
            (std::vector<std::string>{snap.string() + "/**/genai_config.json"}));

  touch(snap / "inner/genai_config.json");
  touch(snap / "inner/model.onnx");
  auto found = resolved(model("oga-hybrid", {{"main", "amd/onnx-model:ignored"}}));
  EXPECT_TRUE(found.downloaded);
  EXPECT_EQ(found.resolved_path(), (snap / "inner").string());

  touch(snap / "inner/model.onnx.data.partial");
  EXPECT_FALSE(resolved(model("ryzenai-llm", {{"main", "amd/onnx-model"}})).downloaded);
}

TEST_F(ModelsResolve, FlmUsesTheTagAndTheInstalledList) {
  auto info = model("flm", {{"main", "llama3.2:1b"}});
  auto unknown = resolved(info);
  EXPECT_TRUE(unknown.downloaded);
  EXPECT_EQ(unknown.resolved_path(), "llama3.2:1b");

  ModelInfo listed = info;
  resolve_model_files(listed, ResolveContext{hub(), std::vector<std::string>{"llama3.2:1b"}});
  EXPECT_TRUE(listed.downloaded);

  ModelInfo absent = info;
  resolve_model_files(absent, ResolveContext{hub(), std::vector<std::string>{"qwen3:0.6b"}});
  EXPECT_FALSE(absent.downloaded);
  EXPECT_EQ(absent.resolved_path(), "");
  ASSERT_EQ(absent.missing_paths.size(), 1u);
  EXPECT_NE(absent.missing_paths[0].find("llama3.2:1b"), std::string::npos);
}

TEST_F(ModelsResolve, LocalPathFileAndDirectory) {
  fs::path file = tree_.write("local/one.gguf");
  auto one = resolved(model("llamacpp", {{"main", file.string()}}, ModelSource::kUserLocalPath));
  EXPECT_TRUE(one.downloaded);
  EXPECT_EQ(one.resolved_path(), file.string());

  tree_.write("local/dir/model-00002-of-00002.gguf");
  tree_.write("local/dir/model-00001-of-00002.gguf");
  tree_.write("local/dir/mmproj-model.gguf");
  fs::path dir = tree_.path() / "local/dir";
  auto folder = resolved(model("llamacpp", {{"main", dir.string()}}, ModelSource::kUserLocalPath));
  EXPECT_TRUE(folder.downloaded);
  EXPECT_EQ(folder.resolved_path(), (dir / "model-00001-of-00002.gguf").string());
  EXPECT_EQ(folder.resolved_path("mmproj"), (dir / "mmproj-model.gguf").string());

  auto gone = resolved(model("llamacpp", {{"main", (tree_.path() / "nope.gguf").string()}},
                             ModelSource::kUserLocalPath));
  EXPECT_FALSE(gone.downloaded);
  EXPECT_EQ(gone.missing_paths, (std::vector<std::string>{(tree_.path() / "nope.gguf").string()}));
}

TEST_F(ModelsResolve, LocalPathLegacyMmprojIsNextToTheMainFile) {
  fs::path file = tree_.write("local/main.gguf");
  auto ckpts = std::map<std::string, std::string>{{"main", file.string()},
                                                  {"mmproj", file.string() + ":proj.gguf"}};
  auto missing = resolved(model("llamacpp", ckpts, ModelSource::kUserLocalPath));
  EXPECT_FALSE(missing.downloaded);
  tree_.write("local/proj.gguf");
  auto found = resolved(model("llamacpp", ckpts, ModelSource::kUserLocalPath));
  EXPECT_TRUE(found.downloaded);
  EXPECT_EQ(found.resolved_path("mmproj"), (tree_.path() / "local/proj.gguf").string());
}

TEST_F(ModelsResolve, LocalUploadIsRelativeToTheHub) {
  tree_.write("hub/models--my-upload/weights.gguf");
  auto info = resolved(model("llamacpp", {{"main", "models--my-upload/weights.gguf"}},
                             ModelSource::kUserLocalUpload));
  EXPECT_TRUE(info.downloaded);
  EXPECT_EQ(info.resolved_path(), (hub() / "models--my-upload/weights.gguf").string());
}

TEST(ModelsRequiredRoles, PerRecipe) {
  EXPECT_TRUE(is_required_role("flm", "main"));
  EXPECT_TRUE(is_required_role("llamacpp", "mmproj"));
  EXPECT_TRUE(is_required_role("llamacpp", "draft"));
  EXPECT_TRUE(is_gguf_model_role("llamacpp", "draft"));
  EXPECT_FALSE(is_gguf_model_role("llamacpp", "mmproj"));
  EXPECT_FALSE(is_gguf_model_role("sd-cpp", "main"));
  EXPECT_FALSE(is_required_role("whispercpp", "npu_cache"));
  EXPECT_TRUE(is_required_role("sd-cpp", "vae"));
  EXPECT_TRUE(is_required_role("sd-cpp", "text_encoder"));
  EXPECT_TRUE(is_required_role("sd-cpp", "llm"));
  EXPECT_FALSE(is_required_role("sd-cpp", "npu_cache"));
}

}  // namespace
}  // namespace lemon
