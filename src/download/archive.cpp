#include "lemon/download/archive.h"

#include "archive_library.h"

#include <memory>
#include <string>
#include <system_error>

namespace lemon::download {

namespace fs = std::filesystem;

namespace {

Error bad_archive(const fs::path& archive, const std::string& what) {
  return Error(ErrorCode::kInvalidArchive, archive.filename().string() + ": " + what);
}

struct ReaderDeleter {
  void operator()(archive* a) const { archive_library().read_free(a); }
};
struct WriterDeleter {
  void operator()(archive* a) const { archive_library().write_free(a); }
};

// `target` of a symlink at `entry` (both archive paths) stays inside.
bool symlink_stays_inside(std::string_view entry, std::string_view target) {
  if (target.empty() || target.front() == '/') {
    return false;
  }
  fs::path resolved =
      (fs::path(std::string(entry)).parent_path() / std::string(target)).lexically_normal();
  std::string s = resolved.generic_string();
  return !s.empty() && s != ".." && !s.starts_with("../") && s.front() != '/';
}

std::string strip_dot_slash(std::string path) {
  while (path.starts_with("./")) {
    path.erase(0, 2);
  }
  return path;
}

}  // namespace

bool is_safe_entry_path(std::string_view entry) {
  if (entry.empty() || entry.front() == '/' || entry.find('\0') != std::string_view::npos) {
    return false;
  }
  std::size_t start = 0;
  while (start <= entry.size()) {
    std::size_t slash = entry.find('/', start);
    std::string_view seg =
        entry.substr(start, slash == std::string_view::npos ? entry.npos : slash - start);
    if (seg == "..") {
      return false;
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return true;
}

Status extract_archive(const fs::path& archive_path, const fs::path& dest,
                       const CancelledFn& cancelled) {
  if (const ArchiveLibrary& lib = archive_library(); !lib.loaded) {
    return Error(ErrorCode::kInternal,
                 "unpacking needs libarchive, which did not load: " + lib.error);
  }
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) {
    return Error(ErrorCode::kInternal, "cannot create " + dest.string() + ": " + ec.message());
  }
  const fs::path root = fs::absolute(dest, ec).lexically_normal();
  std::unique_ptr<archive, ReaderDeleter> in(archive_library().read_new());
  archive_library().read_support_filter_all(in.get());
  archive_library().read_support_format_all(in.get());
  if (archive_library().read_open_filename(in.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK) {
    return bad_archive(archive_path, archive_library().error_string(in.get()) != nullptr
                                         ? archive_library().error_string(in.get())
                                         : "cannot be read");
  }
  std::unique_ptr<archive, WriterDeleter> out(archive_library().write_disk_new());
  // libarchive's own guards as well as ours: no "..", no writing through a
  // symlink. (Entries get absolute paths under `root`, checked above, so its
  // no-absolute-paths guard cannot be used.)
  archive_library().write_disk_set_options(out.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                                          ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                          ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  archive_library().write_disk_set_standard_lookup(out.get());
  while (true) {
    if (cancelled && cancelled()) {
      return Error(ErrorCode::kCancelled,
                   "unpacking " + archive_path.filename().string() + " was cancelled");
    }
    archive_entry* entry = nullptr;
    int rc = archive_library().read_next_header(in.get(), &entry);
    if (rc == ARCHIVE_EOF) {
      break;
    }
    if (rc < ARCHIVE_WARN) {
      return bad_archive(archive_path, archive_library().error_string(in.get()) != nullptr
                                           ? archive_library().error_string(in.get())
                                           : "damaged");
    }
    const char* raw = archive_library().entry_pathname(entry);
    std::string name = strip_dot_slash(raw != nullptr ? raw : "");
    if (name.empty() || name == ".") {
      continue;  // the archive's own root folder
    }
    if (!is_safe_entry_path(name)) {
      return bad_archive(archive_path, "the entry '" + name + "' would land outside the folder");
    }
    const auto type = archive_library().entry_filetype(entry);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
      return bad_archive(archive_path, "the entry '" + name + "' is not a file, folder or link");
    }
    if (type == AE_IFLNK) {
      const char* target = archive_library().entry_symlink(entry);
      if (target == nullptr || !symlink_stays_inside(name, target)) {
        return bad_archive(archive_path, "the link '" + name + "' points outside the folder");
      }
    }
    if (const char* hard = archive_library().entry_hardlink(entry); hard != nullptr) {
      std::string link = strip_dot_slash(hard);
      if (!is_safe_entry_path(link)) {
        return bad_archive(archive_path, "the hard link '" + name + "' points outside the folder");
      }
      archive_library().entry_set_hardlink(entry, (root / link).c_str());
    }
    archive_library().entry_set_pathname(entry, (root / name).c_str());
    if (archive_library().write_header(out.get(), entry) < ARCHIVE_WARN) {
      return bad_archive(archive_path, "cannot write '" + name + "': " +
                                           (archive_library().error_string(out.get()) != nullptr
                                                ? archive_library().error_string(out.get())
                                                : "refused"));
    }
    if (type == AE_IFREG && archive_library().entry_size(entry) > 0) {
      const void* block = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      while ((rc = archive_library().read_data_block(in.get(), &block, &size, &offset)) ==
             ARCHIVE_OK) {
        if (archive_library().write_data_block(out.get(), block, size, offset) < ARCHIVE_WARN) {
          return bad_archive(archive_path, "cannot write '" + name + "': " +
                                               (archive_library().error_string(out.get()) != nullptr
                                                    ? archive_library().error_string(out.get())
                                                    : "write failed"));
        }
      }
      if (rc != ARCHIVE_EOF) {
        return bad_archive(archive_path, "'" + name + "' is damaged or truncated: " +
                                             (archive_library().error_string(in.get()) != nullptr
                                                  ? archive_library().error_string(in.get())
                                                  : "read failed"));
      }
    }
    if (archive_library().write_finish_entry(out.get()) < ARCHIVE_WARN) {
      return bad_archive(archive_path, "cannot finish '" + name + "'");
    }
  }
  if (archive_library().write_close(out.get()) != ARCHIVE_OK) {
    return bad_archive(archive_path, "cannot finish unpacking");
  }
  return ok_status();
}

}  // namespace lemon::download
