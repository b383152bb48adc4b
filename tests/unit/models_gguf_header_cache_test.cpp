// GgufHeaderCache (issue #27 §1): a file read once is not opened again while
// it is unchanged, whether it parsed or not; a change of size or
// modification time reads it again.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>

#include "lemon/models/gguf_header_cache.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;

struct CountingReader {
  int calls = 0;
  bool fail = false;
  Result<GgufHeader> operator()(const std::string& path) {
    ++calls;
    if (fail) {
      return Error(ErrorCode::kInvalidOption, path + " is not a GGUF file");
    }
    GgufHeader h;
    h.architecture = "llama";
    h.tensor_bytes = fs::file_size(path);
    return h;
  }
};

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// Moves the file's modification time by `seconds`, its size unchanged.
void touch(const fs::path& p, int seconds) {
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  utimbuf times{st.st_atime, st.st_mtime + seconds};
  ASSERT_EQ(::utime(p.c_str(), &times), 0);
}

TEST(GgufHeaderCacheTest, ASecondLoadOfTheSameFileReadsNothing) {
  testing::TempDir dir("lemon-gguf-cache");
  const fs::path model = dir.path() / "m.gguf";
  write(model, "0123456789");
  CountingReader reader;
  GgufHeaderCache cache([&reader](const std::string& p) { return reader(p); });
  auto first = cache.get(model.string());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->tensor_bytes, 10u);
  auto second = cache.get(model.string());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->tensor_bytes, 10u);
  EXPECT_EQ(reader.calls, 1) << "the unchanged file was read again";
}

TEST(GgufHeaderCacheTest, AChangedFileIsReadAgain) {
  testing::TempDir dir("lemon-gguf-cache");
  const fs::path model = dir.path() / "m.gguf";
  write(model, "0123456789");
  CountingReader reader;
  GgufHeaderCache cache([&reader](const std::string& p) { return reader(p); });
  ASSERT_TRUE(cache.get(model.string()).ok());
  write(model, "01234567890123456789");  // another size
  EXPECT_EQ(cache.get(model.string())->tensor_bytes, 20u);
  EXPECT_EQ(reader.calls, 2);
  touch(model, 60);  // the same size, another time
  ASSERT_TRUE(cache.get(model.string()).ok());
  EXPECT_EQ(reader.calls, 3);
  ASSERT_TRUE(cache.get(model.string()).ok());
  EXPECT_EQ(reader.calls, 3);
}

TEST(GgufHeaderCacheTest, AFailureIsKeptUntilTheFileChanges) {
  testing::TempDir dir("lemon-gguf-cache");
  const fs::path model = dir.path() / "m.gguf";
  write(model, "partial");
  CountingReader reader;
  reader.fail = true;
  GgufHeaderCache cache([&reader](const std::string& p) { return reader(p); });
  EXPECT_FALSE(cache.get(model.string()).ok());
  EXPECT_FALSE(cache.get(model.string()).ok());
  EXPECT_EQ(reader.calls, 1) << "an unchanged file that is not a GGUF is read once";
  // The download goes on: the file grows, and is read again.
  reader.fail = false;
  write(model, "partial, and now complete");
  EXPECT_TRUE(cache.get(model.string()).ok());
  EXPECT_EQ(reader.calls, 2);
  // A missing file goes to the reader, which names the problem.
  reader.fail = true;
  EXPECT_FALSE(cache.get((dir.path() / "absent.gguf").string()).ok());
  EXPECT_EQ(reader.calls, 3);
}

}  // namespace
}  // namespace lemon
