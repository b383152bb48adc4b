#include "lemon/download/checksum.h"

#include <string>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace lemon::download {
namespace {

using ChecksumKind = Checksum::Kind;

std::string digest(ChecksumKind kind, const std::string& data) {
  Hasher h(kind, data.size());
  h.update(data.data(), data.size());
  return h.finish();
}

TEST(DownloadChecksum, Sha256KnownVectors) {
  EXPECT_EQ(digest(ChecksumKind::kSha256, "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest(ChecksumKind::kSha256, ""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(DownloadChecksum, GitBlobSha1KnownVectors) {
  EXPECT_EQ(digest(ChecksumKind::kGitBlobSha1, "hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(digest(ChecksumKind::kGitBlobSha1, ""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

TEST(DownloadChecksum, NoneGivesEmptyDigest) {
  EXPECT_EQ(digest(ChecksumKind::kNone, "abc"), "");
}

TEST(DownloadChecksum, ChunkedUpdatesEqualOneShot) {
  std::string data;
  for (int i = 0; i < 100000; ++i) {
    data += static_cast<char>((i * 131) & 0xff);
  }
  for (ChecksumKind kind : {ChecksumKind::kSha256, ChecksumKind::kGitBlobSha1}) {
    Hasher h(kind, data.size());
    for (std::size_t at = 0; at < data.size(); at += 7777) {
      h.update(data.data() + at, std::min<std::size_t>(7777, data.size() - at));
    }
    EXPECT_EQ(h.finish(), digest(kind, data)) << checksum_kind_name(kind);
  }
}

TEST(DownloadChecksum, MovedHasherKeepsState) {
  Hasher a(ChecksumKind::kSha256, 3);
  a.update("a", 1);
  Hasher b(std::move(a));
  b.update("bc", 2);
  EXPECT_EQ(b.finish(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DownloadChecksum, KindNames) {
  EXPECT_STREQ(checksum_kind_name(ChecksumKind::kNone), "none");
  EXPECT_STREQ(checksum_kind_name(ChecksumKind::kSha256), "sha256");
  EXPECT_STREQ(checksum_kind_name(ChecksumKind::kGitBlobSha1), "git-sha1");
}

TEST(DownloadChecksum, HashFile) {
  lemon::testing::TempDir dir;
  auto file = dir.write("f.txt", "hello\n");
  auto sha1 = hash_file(file, ChecksumKind::kGitBlobSha1);
  ASSERT_TRUE(sha1.ok()) << sha1.error().message();
  EXPECT_EQ(*sha1, "ce013625030ba8dba906f756967f9e9ca394464a");
  auto empty = hash_file(dir.write("empty", ""), ChecksumKind::kGitBlobSha1);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

TEST(DownloadChecksum, HashFileMissingIsInternal) {
  lemon::testing::TempDir dir;
  auto r = hash_file(dir.path() / "absent", ChecksumKind::kSha256);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInternal);
}

TEST(DownloadChecksum, HashPrefixThenRestCoversWholeContent) {
  lemon::testing::TempDir dir;
  auto file = dir.write("f", "abcdef");
  Hasher h(ChecksumKind::kSha256, 3);
  ASSERT_TRUE(hash_prefix(file, 1, h).ok());
  h.update("bc", 2);
  EXPECT_EQ(h.finish(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DownloadChecksum, HashPrefixLongerThanFileFails) {
  lemon::testing::TempDir dir;
  auto file = dir.write("f", "abc");
  Hasher h(ChecksumKind::kSha256, 10);
  Status s = hash_prefix(file, 10, h);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace lemon::download
