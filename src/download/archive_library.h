// libarchive's entry points, loaded on first use (lazy_library.h). Only
// archive.cpp calls libarchive, through it; the router's binary does not
// link libarchive.
//
// Thread-safety: archive_library() may be called from any thread; the first
// call loads the library.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <string>

namespace lemon::download {

struct ArchiveLibrary {
  bool loaded = false;
  std::string error;  // why it is not loaded
  decltype(&::archive_read_new) read_new = nullptr;
  decltype(&::archive_read_support_filter_all) read_support_filter_all = nullptr;
  decltype(&::archive_read_support_format_all) read_support_format_all = nullptr;
  decltype(&::archive_read_open_filename) read_open_filename = nullptr;
  decltype(&::archive_read_next_header) read_next_header = nullptr;
  decltype(&::archive_read_data_block) read_data_block = nullptr;
  decltype(&::archive_read_free) read_free = nullptr;
  decltype(&::archive_write_disk_new) write_disk_new = nullptr;
  decltype(&::archive_write_disk_set_options) write_disk_set_options = nullptr;
  decltype(&::archive_write_disk_set_standard_lookup) write_disk_set_standard_lookup = nullptr;
  decltype(&::archive_write_header) write_header = nullptr;
  decltype(&::archive_write_data_block) write_data_block = nullptr;
  decltype(&::archive_write_finish_entry) write_finish_entry = nullptr;
  decltype(&::archive_write_close) write_close = nullptr;
  decltype(&::archive_write_free) write_free = nullptr;
  decltype(&::archive_error_string) error_string = nullptr;
  decltype(&::archive_entry_pathname) entry_pathname = nullptr;
  decltype(&::archive_entry_set_pathname) entry_set_pathname = nullptr;
  decltype(&::archive_entry_hardlink) entry_hardlink = nullptr;
  decltype(&::archive_entry_set_hardlink) entry_set_hardlink = nullptr;
  decltype(&::archive_entry_symlink) entry_symlink = nullptr;
  decltype(&::archive_entry_size) entry_size = nullptr;
  decltype(&::archive_entry_filetype) entry_filetype = nullptr;
};

// libarchive, loaded; `loaded` is false (and `error` says why) when it
// cannot be, and every extraction then fails with that error.
const ArchiveLibrary& archive_library();

}  // namespace lemon::download
