// The hub cache writer (relative blob links, refs) and ModelStore's delete:
// exactly one model's files go; other variants and shared files stay.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lemon/models/catalogue.h"
#include "lemon/models/hf_cache.h"
#include "lemon/models/hub_cache_writer.h"
#include "lemon/models/model_store.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const std::string kBuiltinCatalogue = std::string(LEMON_RESOURCES_DIR) + "/server_models.json";
const std::string kLayoutCommit = "0123456789abcdef0123456789abcdef01234567";

class ModelsStoreLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(t_.path() / "cache");
    hub_ = t_.path() / "hub";
    repo_ = hf::repo_dir(hub_, "org/r-GGUF");
  }

  // A blob plus its snapshot link, as the store writes them.
  void put(const std::string& rel, const std::string& etag, const std::string& content) {
    fs::create_directories(repo_ / "blobs");
    std::ofstream(hf::blob_path(repo_, etag)) << content;
    ASSERT_TRUE(hf::link_snapshot_entry(repo_, kLayoutCommit, rel, etag).ok());
  }

  std::unique_ptr<ModelCatalogue> open_catalogue(const std::string& user_models) {
    t_.write("cache/user_models.json", user_models);
    CatalogueSources s;
    s.server_models_json = kBuiltinCatalogue;
    s.cache_dir = (t_.path() / "cache").string();
    s.hf_hub_cache = hub_.string();
    auto cat = ModelCatalogue::open(s);
    EXPECT_TRUE(cat.ok());
    return cat.ok() ? std::move(cat).value() : nullptr;
  }

  static HubClient offline_hub() {
    HubSettings s;
    s.offline = true;
    return HubClient(s);
  }

  TempDir t_{"lemon-store"};
  fs::path hub_;
  fs::path repo_;
};

TEST_F(ModelsStoreLayout, LinksAreRelativeAndResolveToTheBlob) {
  put("top.gguf", "e1", "one");
  put("Q4/nested/deep.gguf", "e2", "two");
  fs::path top = hf::snapshot_entry(repo_, kLayoutCommit, "top.gguf");
  fs::path deep = hf::snapshot_entry(repo_, kLayoutCommit, "Q4/nested/deep.gguf");
  EXPECT_EQ(fs::read_symlink(top), fs::path("../../blobs/e1"));
  EXPECT_EQ(fs::read_symlink(deep), fs::path("../../../../blobs/e2"));
  EXPECT_TRUE(hf::is_complete_file(deep, 3));
  EXPECT_FALSE(hf::is_complete_file(deep, 4));

  ASSERT_TRUE(hf::write_ref(repo_, "main", kLayoutCommit).ok());
  std::ifstream ref(repo_ / "refs" / "main");
  std::string text((std::istreambuf_iterator<char>(ref)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, kLayoutCommit);  // no newline, as huggingface_hub writes it
  EXPECT_EQ(hf::current_snapshot(repo_), repo_ / "snapshots" / kLayoutCommit);

  // Replacing an entry is atomic and leaves no temporary names behind.
  put("top.gguf", "e3", "three");
  EXPECT_EQ(fs::read_symlink(top), fs::path("../../blobs/e3"));
  int entries = 0;
  for (const auto& e : fs::directory_iterator(repo_ / "snapshots" / kLayoutCommit)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 2);  // top.gguf and Q4/
}

TEST_F(ModelsStoreLayout, DeleteKeepsOtherVariantsAndSharedFiles) {
  put("r-Q4_0.gguf", "q4", "q4 weights");
  put("r-Q8_0.gguf", "q8", "q8 weights");
  put("mmproj-F16.gguf", "mm", "projector");
  ASSERT_TRUE(hf::write_ref(repo_, "main", kLayoutCommit).ok());
  auto cat = open_catalogue(R"({
    "a": {"checkpoint": "org/r-GGUF:Q4_0", "mmproj": "mmproj-F16.gguf", "recipe": "llamacpp"},
    "b": {"checkpoint": "org/r-GGUF:Q8_0", "mmproj": "mmproj-F16.gguf", "recipe": "llamacpp"}
  })");
  ASSERT_NE(cat, nullptr);
  ASSERT_TRUE(cat->resolve("user.a")->downloaded);
  ASSERT_TRUE(cat->resolve("user.b")->downloaded);
  ModelStore store(*cat, offline_hub());

  ASSERT_TRUE(store.remove_files("user.a").ok());
  EXPECT_FALSE(
      fs::exists(fs::symlink_status(hf::snapshot_entry(repo_, kLayoutCommit, "r-Q4_0.gguf"))));
  EXPECT_FALSE(fs::exists(hf::blob_path(repo_, "q4")));
  EXPECT_TRUE(fs::exists(hf::blob_path(repo_, "q8")));
  EXPECT_TRUE(fs::exists(hf::blob_path(repo_, "mm")));  // b needs it
  EXPECT_FALSE(cat->resolve("user.a")->downloaded);
  EXPECT_TRUE(cat->resolve("user.b")->downloaded);

  auto again = store.remove_files("user.a");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ErrorCode::kModelFilesMissing);

  ASSERT_TRUE(store.remove_files("user.b").ok());
  EXPECT_FALSE(fs::exists(repo_));  // nothing of the repository is left
}

TEST_F(ModelsStoreLayout, DeleteRemovesTheModelFromEverySnapshot) {
  // The same file at an older commit (refs/main moved on): deleting the
  // model must not leave it resolvable through the older snapshot.
  put("r-Q4_0.gguf", "q4", "q4 weights");
  put("r-Q8_0.gguf", "q8", "q8 weights");
  const std::string old_commit(40, 'f');
  ASSERT_TRUE(hf::link_snapshot_entry(repo_, old_commit, "r-Q4_0.gguf", "q4").ok());
  ASSERT_TRUE(hf::link_snapshot_entry(repo_, old_commit, "r-Q8_0.gguf", "q8").ok());
  ASSERT_TRUE(hf::write_ref(repo_, "main", kLayoutCommit).ok());
  auto cat = open_catalogue(R"({"a": {"checkpoint": "org/r-GGUF:Q4_0", "recipe": "llamacpp"},
                                "b": {"checkpoint": "org/r-GGUF:Q8_0", "recipe": "llamacpp"}})");
  ASSERT_NE(cat, nullptr);
  ModelStore store(*cat, offline_hub());
  ASSERT_TRUE(store.remove_files("user.a").ok());
  EXPECT_FALSE(fs::exists(hf::blob_path(repo_, "q4")));
  EXPECT_FALSE(
      fs::exists(fs::symlink_status(hf::snapshot_entry(repo_, old_commit, "r-Q4_0.gguf"))));
  EXPECT_FALSE(cat->resolve("user.a")->downloaded);
  // b's file stays in both snapshots.
  EXPECT_TRUE(fs::exists(hf::snapshot_entry(repo_, old_commit, "r-Q8_0.gguf")));
  EXPECT_TRUE(cat->resolve("user.b")->downloaded);
}

TEST_F(ModelsStoreLayout, DeleteRemovesLemonadeLayoutFilesAndRefusesLocalModels) {
  // Lemonade 9.4.1 writes files straight into the snapshot, no blobs.
  t_.write(fs::path("hub") / "models--org--r-GGUF" / "snapshots" / kLayoutCommit / "r-Q4_0.gguf",
           "w");
  auto cat = open_catalogue(R"({
    "a": {"checkpoint": "org/r-GGUF:Q4_0", "recipe": "llamacpp"},
    "local": {"checkpoint": "/nowhere/x.gguf", "recipe": "llamacpp", "source": "local_path"}
  })");
  ASSERT_NE(cat, nullptr);
  ASSERT_TRUE(cat->resolve("user.a")->downloaded);
  ModelStore store(*cat, offline_hub());
  ASSERT_TRUE(store.remove_files("user.a").ok());
  EXPECT_FALSE(cat->resolve("user.a")->downloaded);
  EXPECT_EQ(store.remove_files("user.local").error().code(), ErrorCode::kUnsupportedOperation);
  EXPECT_EQ(store.remove_files("user.nope").error().code(), ErrorCode::kModelNotFound);
}

TEST_F(ModelsStoreLayout, OfflineDownloadOfAMissingModelNamesOfflineMode) {
  auto cat = open_catalogue(R"({"a": {"checkpoint": "org/r-GGUF:Q4_0", "recipe": "llamacpp"}})");
  ASSERT_NE(cat, nullptr);
  ModelStore store(*cat, offline_hub());
  Status st = store.ensure_downloaded("user.a", {});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kOffline);
  EXPECT_NE(st.error().message().find("LEMONADE_OFFLINE"), std::string::npos);
}

TEST_F(ModelsStoreLayout, UserModelsFileIsRewrittenKeepingOtherEntries) {
  auto cat = open_catalogue(R"({"keep": {"checkpoint": "org/k:f.bin", "recipe": "whispercpp"}})");
  ASSERT_NE(cat, nullptr);
  nlohmann::ordered_json entry = {{"checkpoint", "org/r-GGUF:Q4_0"}, {"recipe", "llamacpp"}};
  ASSERT_TRUE(cat->put_user_model("new", entry).ok());
  EXPECT_TRUE(cat->find("user.new").has_value());
  EXPECT_TRUE(cat->find("user.keep").has_value());
  ASSERT_TRUE(cat->remove_user_model("new").ok());
  EXPECT_FALSE(cat->find("user.new").has_value());
  EXPECT_TRUE(cat->find("user.keep").has_value());

  // A malformed file is never overwritten.
  t_.write("cache/user_models.json", "{broken");
  auto put = cat->put_user_model("new", entry);
  ASSERT_FALSE(put.ok());
  std::ifstream in(t_.path() / "cache" / "user_models.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{broken");
}

}  // namespace
}  // namespace lemon
