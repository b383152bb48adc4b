// GGUF variant rules (choose_gguf) over listings, and the HF hub cache
// helpers (snapshot choice, manifest, .partial, symlinks into blobs/).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "lemon/models/gguf_variant.h"
#include "lemon/models/hf_cache.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using hf::FileState;
using hf::SnapshotFile;
using testing::TempDir;

std::vector<SnapshotFile> present(std::initializer_list<const char*> rels) {
  std::vector<SnapshotFile> out;
  for (const char* r : rels) {
    out.push_back({r, FileState::kPresent});
  }
  std::sort(out.begin(), out.end(),
            [](const SnapshotFile& a, const SnapshotFile& b) { return a.rel < b.rel; });
  return out;
}

TEST(ModelsGgufVariant, WildcardTakesEveryNonMmprojGguf) {
  auto c = choose_gguf(
      present({"b-00002-of-00002.gguf", "b-00001-of-00002.gguf", "mmproj-F16.gguf", "README.md"}),
      "*");
  EXPECT_EQ(c.main, "b-00001-of-00002.gguf");
  EXPECT_EQ(c.files, (std::vector<std::string>{"b-00001-of-00002.gguf", "b-00002-of-00002.gguf"}));
  EXPECT_TRUE(c.missing.empty());
  auto none = choose_gguf(present({"mmproj.gguf"}), "*");
  EXPECT_TRUE(none.main.empty());
  EXPECT_EQ(none.missing, (std::vector<std::string>{"*.gguf"}));
}

TEST(ModelsGgufVariant, ExactPathVariant) {
  auto listing = present({"sub/model-Q4_0.gguf", "ggml-tiny.bin", "model-Q8_0.gguf"});
  EXPECT_EQ(choose_gguf(listing, "sub/model-Q4_0.gguf").main, "sub/model-Q4_0.gguf");
  EXPECT_EQ(choose_gguf(listing, "ggml-tiny.bin").main, "ggml-tiny.bin");
  auto absent = choose_gguf(listing, "model-Q4_0.gguf");  // not at the top level
  EXPECT_TRUE(absent.main.empty());
  EXPECT_EQ(absent.missing, (std::vector<std::string>{"model-Q4_0.gguf"}));
}

TEST(ModelsGgufVariant, EmptyVariantIsFirstSortedNonMmproj) {
  auto c = choose_gguf(present({"z-model.gguf", "a-mmproj.gguf", "m-model.gguf", "a.txt"}), "");
  EXPECT_EQ(c.main, "m-model.gguf");
  auto none = choose_gguf(present({"mmproj-only.gguf", "config.json"}), "");
  EXPECT_TRUE(none.main.empty());
  EXPECT_EQ(none.missing, (std::vector<std::string>{"*.gguf"}));
}

TEST(ModelsGgufVariant, SuffixMatchIsCaseInsensitiveAndIgnoresMmproj) {
  auto listing = present({"Model-Q4_K_M.gguf", "Model-Q8_0.gguf", "mmproj-model-q4_k_m.gguf"});
  EXPECT_EQ(choose_gguf(listing, "q4_k_m").main, "Model-Q4_K_M.gguf");
  EXPECT_EQ(choose_gguf(listing, "Q8_0").main, "Model-Q8_0.gguf");
}

TEST(ModelsGgufVariant, NoFallbackToAnotherVariant) {
  auto c = choose_gguf(present({"Model-Q4_0.gguf"}), "Q8_0");
  EXPECT_TRUE(c.main.empty());
  EXPECT_TRUE(c.files.empty());
  EXPECT_EQ(c.missing, (std::vector<std::string>{"*Q8_0.gguf"}));
}

TEST(ModelsGgufVariant, SeveralSuffixMatchesAreAmbiguous) {
  auto c = choose_gguf(present({"a/Model-Q4_0.gguf", "b/Other-Q4_0.gguf"}), "Q4_0");
  EXPECT_TRUE(c.main.empty());
  ASSERT_EQ(c.missing.size(), 1u);
  EXPECT_NE(c.missing[0].find("*Q4_0.gguf"), std::string::npos);
  EXPECT_NE(c.missing[0].find("ambiguous"), std::string::npos);
  EXPECT_NE(c.missing[0].find("a/Model-Q4_0.gguf"), std::string::npos);
  EXPECT_NE(c.missing[0].find("b/Other-Q4_0.gguf"), std::string::npos);
}

TEST(ModelsGgufVariant, ShardedVariantNeedsEveryShard) {
  auto full =
      present({"Q4_K_M/gpt-Q4_K_M-00001-of-00003.gguf", "Q4_K_M/gpt-Q4_K_M-00002-of-00003.gguf",
               "Q4_K_M/gpt-Q4_K_M-00003-of-00003.gguf", "gpt-Q8_0.gguf"});
  auto c = choose_gguf(full, "Q4_K_M");
  EXPECT_EQ(c.main, "Q4_K_M/gpt-Q4_K_M-00001-of-00003.gguf");
  EXPECT_EQ(c.files.size(), 3u);

  auto partial = present({"gpt-Q4_K_M-00001-of-00003.gguf", "gpt-Q4_K_M-00003-of-00003.gguf"});
  auto p = choose_gguf(partial, "q4_k_m");
  EXPECT_TRUE(p.main.empty());
  EXPECT_EQ(p.missing, (std::vector<std::string>{"gpt-Q4_K_M-00002-of-00003.gguf"}));
}

TEST(ModelsGgufVariant, FirstShardFromEmptyVariantAlsoNeedsEveryShard) {
  auto c = choose_gguf(present({"m-00001-of-00002.gguf"}), "");
  EXPECT_TRUE(c.main.empty());
  EXPECT_EQ(c.missing, (std::vector<std::string>{"m-00002-of-00002.gguf"}));
}

TEST(ModelsGgufVariant, FolderVariantTakesEveryGgufInTheFolder) {
  auto c = choose_gguf(present({"UD-Q4_K_XL/part-b.gguf", "UD-Q4_K_XL/part-a.gguf",
                                "UD-Q4_K_XL/mmproj.gguf", "other/x.gguf"}),
                       "ud-q4_k_xl");
  EXPECT_EQ(c.main, "UD-Q4_K_XL/part-a.gguf");
  EXPECT_EQ(c.files,
            (std::vector<std::string>{"UD-Q4_K_XL/part-a.gguf", "UD-Q4_K_XL/part-b.gguf"}));
  auto none = choose_gguf(present({"other/x.gguf"}), "UD-Q4_K_XL");
  EXPECT_EQ(none.missing, (std::vector<std::string>{"*UD-Q4_K_XL.gguf"}));
}

TEST(ModelsGgufVariant, IncompleteFilesAreNotChosen) {
  std::vector<SnapshotFile> listing = {{"m-Q4_0.gguf", FileState::kPartial},
                                       {"m-Q8_0.gguf", FileState::kDangling}};
  auto q4 = choose_gguf(listing, "Q4_0");
  EXPECT_TRUE(q4.main.empty());
  ASSERT_EQ(q4.missing.size(), 1u);
  EXPECT_NE(q4.missing[0].find("m-Q4_0.gguf.partial"), std::string::npos);
  auto q8 = choose_gguf(listing, "Q8_0");
  ASSERT_EQ(q8.missing.size(), 1u);
  EXPECT_NE(q8.missing[0].find("dangling"), std::string::npos);
}

TEST(ModelsHfCache, CheckpointAndRepoDir) {
  auto ref = hf::split_checkpoint("org/repo:Q4_0");
  EXPECT_EQ(ref.repo, "org/repo");
  EXPECT_EQ(ref.variant, "Q4_0");
  EXPECT_EQ(hf::split_checkpoint("org/repo").variant, "");
  EXPECT_EQ(hf::split_checkpoint("org/repo:").variant, "");
  EXPECT_EQ(hf::repo_dir("/hub", "org/repo"), fs::path("/hub/models--org--repo"));
}

TEST(ModelsHfCache, RefsMainWinsOverNewestSnapshot) {
  TempDir t{"lemon-models"};
  fs::path repo = t.path() / "models--org--repo";
  t.write("models--org--repo/snapshots/old/a.gguf");
  t.write("models--org--repo/snapshots/new/a.gguf");
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(repo / "snapshots/old", now - std::chrono::hours(2));
  fs::last_write_time(repo / "snapshots/new", now - std::chrono::hours(1));
  EXPECT_EQ(hf::current_snapshot(repo), repo / "snapshots/new");

  t.write("models--org--repo/refs/main", "old\n");
  EXPECT_EQ(hf::current_snapshot(repo), repo / "snapshots/old");

  t.write("models--org--repo/refs/main", "gone");  // names no snapshot: newest
  EXPECT_EQ(hf::current_snapshot(repo), repo / "snapshots/new");

  EXPECT_FALSE(hf::current_snapshot(t.path() / "models--none--here").has_value());
}

TEST(ModelsHfCache, FileStatesAndListing) {
  TempDir t{"lemon-models"};
  fs::path snap = t.path() / "snap";
  t.write("blobs/abc", "weights");
  t.write("snap/real.gguf");
  fs::create_directories(snap / "sub");
  fs::create_symlink(t.path() / "blobs/abc", snap / "sub/linked.gguf");
  fs::create_symlink(t.path() / "blobs/missing", snap / "dangling.gguf");
  t.write("snap/half.gguf");
  t.write("snap/half.gguf.partial");
  t.write("snap/only-partial.gguf.partial");
  t.write("snap/.download_manifest.json", "{}");

  EXPECT_EQ(hf::file_state(snap / "real.gguf"), FileState::kPresent);
  EXPECT_EQ(hf::file_state(snap / "sub/linked.gguf"), FileState::kPresent);
  EXPECT_EQ(hf::file_state(snap / "dangling.gguf"), FileState::kDangling);
  EXPECT_EQ(hf::file_state(snap / "half.gguf"), FileState::kPartial);
  EXPECT_EQ(hf::file_state(snap / "nothing.gguf"), FileState::kMissing);
  EXPECT_EQ(hf::file_state(snap / "sub"), FileState::kNotAFile);
  EXPECT_TRUE(hf::has_download_manifest(snap));
  EXPECT_FALSE(hf::has_download_manifest(t.path() / "blobs"));

  auto listing = hf::list_files(snap);
  std::vector<std::pair<std::string, FileState>> got;
  for (const auto& f : listing) {
    got.emplace_back(f.rel, f.state);
  }
  std::vector<std::pair<std::string, FileState>> want = {{"dangling.gguf", FileState::kDangling},
                                                         {"half.gguf", FileState::kPartial},
                                                         {"only-partial.gguf", FileState::kPartial},
                                                         {"real.gguf", FileState::kPresent},
                                                         {"sub/linked.gguf", FileState::kPresent}};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(hf::list_files(t.path() / "does-not-exist").empty());
}

}  // namespace
}  // namespace lemon
