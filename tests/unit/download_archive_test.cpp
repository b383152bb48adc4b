// extract_archive: tar.gz and zip through libarchive, executable bits and
// relative links kept; entries that escape the folder and damaged archives
// refused with kInvalidArchive.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lemon/download/archive.h"
#include "support/temp_dir.h"

namespace lemon::download {
namespace {

namespace fs = std::filesystem;
using lemon::testing::TempDir;

struct Member {
  std::string name;
  std::string content;  // for files
  int mode = 0644;
  std::string link;  // symlink target; a symlink when not empty
  bool dir = false;
};

Member file(std::string name, std::string content, int mode = 0644) {
  Member m;
  m.name = std::move(name);
  m.content = std::move(content);
  m.mode = mode;
  return m;
}
Member folder(std::string name) {
  Member m;
  m.name = std::move(name);
  m.dir = true;
  return m;
}
Member symlink(std::string name, std::string target) {
  Member m;
  m.name = std::move(name);
  m.link = std::move(target);
  return m;
}

// Writes `members` as a gzip'd tar (or a zip) with libarchive.
void write_archive(const fs::path& path, const std::vector<Member>& members, bool zip = false) {
  archive* a = archive_write_new();
  if (zip) {
    archive_write_set_format_zip(a);
  } else {
    archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
  }
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  for (const auto& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    if (m.dir) {
      archive_entry_set_filetype(e, AE_IFDIR);
      archive_entry_set_perm(e, 0755);
    } else if (!m.link.empty()) {
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, m.link.c_str());
      archive_entry_set_perm(e, 0777);
    } else {
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_perm(e, static_cast<__LA_MODE_T>(m.mode));
      archive_entry_set_size(e, static_cast<la_int64_t>(m.content.size()));
    }
    archive_write_header(a, e);
    if (!m.content.empty()) {
      archive_write_data(a, m.content.data(), m.content.size());
    }
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::vector<Member> kRelease = {
    folder("llama-b1/"),
    file("llama-b1/llama-server", "#!/bin/sh\necho version\n", 0755),
    file("llama-b1/libggml.so", "lib"),
    symlink("llama-b1/libggml.so.1", "libggml.so"),
};

TEST(DownloadArchive, UnpacksTarGzKeepingExecBitsAndLinks) {
  TempDir t;
  write_archive(t.path() / "a.tar.gz", kRelease);
  Status s = extract_archive(t.path() / "a.tar.gz", t.path() / "out");
  ASSERT_TRUE(s.ok()) << s.error().message();
  fs::path dir = t.path() / "out" / "llama-b1";
  EXPECT_EQ(read_file(dir / "llama-server"), "#!/bin/sh\necho version\n");
  EXPECT_NE(fs::status(dir / "llama-server").permissions() & fs::perms::owner_exec,
            fs::perms::none);
  EXPECT_EQ(fs::status(dir / "libggml.so").permissions() & fs::perms::owner_exec, fs::perms::none);
  ASSERT_TRUE(fs::is_symlink(dir / "libggml.so.1"));
  EXPECT_EQ(fs::read_symlink(dir / "libggml.so.1"), "libggml.so");
}

TEST(DownloadArchive, UnpacksZip) {
  TempDir t;
  write_archive(t.path() / "a.zip", {file("bin/whisper-server", "elf", 0755)}, /*zip=*/true);
  Status s = extract_archive(t.path() / "a.zip", t.path() / "out");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(read_file(t.path() / "out" / "bin" / "whisper-server"), "elf");
  EXPECT_NE(
      fs::status(t.path() / "out" / "bin" / "whisper-server").permissions() & fs::perms::owner_exec,
      fs::perms::none);
}

TEST(DownloadArchive, RefusesEntriesThatEscapeTheFolder) {
  const std::vector<std::vector<Member>> bad = {
      {file("../evil", "x")},
      {file("ok/../../evil", "x")},
      {file("/tmp/lemon-archive-abs-evil", "x")},
      {symlink("link", "../../outside")},
      {symlink("link", "/etc/passwd")},
  };
  for (const auto& members : bad) {
    TempDir t;
    write_archive(t.path() / "bad.tar.gz", members);
    Status s = extract_archive(t.path() / "bad.tar.gz", t.path() / "a" / "out");
    ASSERT_FALSE(s.ok()) << members[0].name;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArchive) << members[0].name;
    EXPECT_NE(s.error().message().find(members[0].name.substr(members[0].name.rfind('/') + 1)),
              std::string::npos)
        << s.error().message();
    EXPECT_FALSE(fs::exists(t.path() / "evil"));
    EXPECT_FALSE(fs::exists(t.path() / "a" / "evil"));
  }
  EXPECT_FALSE(fs::exists("/tmp/lemon-archive-abs-evil"));
}

TEST(DownloadArchive, ADamagedArchiveIsInvalid) {
  TempDir t;
  std::string big(1 << 20, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) {
    big[i] = static_cast<char>((i * 2654435761u) >> 13);  // poorly compressible
  }
  write_archive(t.path() / "a.tar.gz", {file("llama-server", big, 0755)});
  std::string bytes = read_file(t.path() / "a.tar.gz");
  std::ofstream(t.path() / "cut.tar.gz", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  Status s = extract_archive(t.path() / "cut.tar.gz", t.path() / "out");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArchive);
  std::ofstream(t.path() / "junk.tar.gz") << "not an archive at all";
  EXPECT_EQ(extract_archive(t.path() / "junk.tar.gz", t.path() / "out2").error().code(),
            ErrorCode::kInvalidArchive);
}

TEST(DownloadArchive, EntryPathRules) {
  EXPECT_TRUE(is_safe_entry_path("a/b/c"));
  EXPECT_TRUE(is_safe_entry_path("a/..b/c"));
  EXPECT_FALSE(is_safe_entry_path(""));
  EXPECT_FALSE(is_safe_entry_path("/a"));
  EXPECT_FALSE(is_safe_entry_path(".."));
  EXPECT_FALSE(is_safe_entry_path("a/../../b"));
}

}  // namespace
}  // namespace lemon::download
