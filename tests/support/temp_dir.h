// TempDir: a fresh directory made with mkdtemp(3) under ::testing::TempDir()
// (TEST_TMPDIR, TMPDIR or /tmp), removed with everything in it when the
// TempDir is destroyed. The constructor throws std::runtime_error if the
// directory cannot be made, which fails the test that wanted it.
#pragma once

#include <filesystem>
#include <string>

namespace lemon::testing {

class TempDir {
 public:
  // The directory is named <prefix>-XXXXXX.
  explicit TempDir(const std::string& prefix = "lemon-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `content` to path() / rel (replacing any file there), creating its
  // directories first; returns the file's full path.
  std::filesystem::path write(const std::filesystem::path& rel,
                              const std::string& content = "x") const;

 private:
  std::filesystem::path path_;
};

}  // namespace lemon::testing
