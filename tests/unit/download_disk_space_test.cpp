#include "lemon/download/disk_space.h"

#include <string>

#include <gtest/gtest.h>

#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon::download {
namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024;
constexpr std::uint64_t kGiB = 1024 * kMiB;

TEST(DownloadDiskSpace, MarginIsAtLeast256MiBOrOnePercent) {
  EXPECT_EQ(free_space_margin(0), 256 * kMiB);
  EXPECT_EQ(free_space_margin(10 * kGiB), 256 * kMiB);
  EXPECT_EQ(free_space_margin(100 * kGiB), kGiB);
}

TEST(DownloadDiskSpace, FreeBytesUsesNearestExistingAncestor) {
  lemon::testing::TempDir dir;
  auto here = free_bytes(dir.path());
  ASSERT_TRUE(here.has_value());
  auto below = free_bytes(dir.path() / "not" / "made" / "yet");
  ASSERT_TRUE(below.has_value());
  EXPECT_GT(*below, 0u);
}

TEST(DownloadDiskSpace, OverrideTooSmallFails) {
  lemon::testing::TempDir dir;
  lemon::testing::ScopedEnv env;
  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_FREE_BYTES", "1000"));
  Status s = check_free_space(dir.path() / "sub", 5000);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInsufficientStorage);
  EXPECT_NE(s.error().message().find("5000"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("1000"), std::string::npos) << s.error().message();
}

TEST(DownloadDiskSpace, MarginCountsAgainstFreeSpace) {
  lemon::testing::TempDir dir;
  lemon::testing::ScopedEnv env;
  // 100 MiB fit, but not with the 256 MiB margin.
  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_FREE_BYTES", std::to_string(300 * kMiB)));
  EXPECT_FALSE(check_free_space(dir.path(), 100 * kMiB).ok());
  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_FREE_BYTES", std::to_string(400 * kMiB)));
  EXPECT_TRUE(check_free_space(dir.path(), 100 * kMiB).ok());
}

TEST(DownloadDiskSpace, NothingToFetchAlwaysFits) {
  lemon::testing::TempDir dir;
  lemon::testing::ScopedEnv env;
  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_FREE_BYTES", "0"));
  EXPECT_TRUE(check_free_space(dir.path(), 0).ok());
}

TEST(DownloadDiskSpace, InvalidOverrideIsIgnored) {
  lemon::testing::TempDir dir;
  lemon::testing::ScopedEnv env;
  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_FREE_BYTES", "lots"));
  // The measured free space of a temp dir holds a one-byte download.
  EXPECT_TRUE(check_free_space(dir.path(), 1).ok());
}

}  // namespace
}  // namespace lemon::download
