#include "archive_library.h"

#include <mutex>

#include "lazy_library.h"

namespace lemon::download {

const ArchiveLibrary& archive_library() {
  static ArchiveLibrary lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = open_library("libarchive.so.13", lib.error);
    if (h == nullptr) {
      return;
    }
    std::string& e = lib.error;
    bool ok = bind_symbol(h, "archive_read_new", lib.read_new, e);
    ok = bind_symbol(h, "archive_read_support_filter_all", lib.read_support_filter_all, e) && ok;
    ok = bind_symbol(h, "archive_read_support_format_all", lib.read_support_format_all, e) && ok;
    ok = bind_symbol(h, "archive_read_open_filename", lib.read_open_filename, e) && ok;
    ok = bind_symbol(h, "archive_read_next_header", lib.read_next_header, e) && ok;
    ok = bind_symbol(h, "archive_read_data_block", lib.read_data_block, e) && ok;
    ok = bind_symbol(h, "archive_read_free", lib.read_free, e) && ok;
    ok = bind_symbol(h, "archive_write_disk_new", lib.write_disk_new, e) && ok;
    ok = bind_symbol(h, "archive_write_disk_set_options", lib.write_disk_set_options, e) && ok;
    ok = bind_symbol(h, "archive_write_disk_set_standard_lookup",
                     lib.write_disk_set_standard_lookup, e) &&
         ok;
    ok = bind_symbol(h, "archive_write_header", lib.write_header, e) && ok;
    ok = bind_symbol(h, "archive_write_data_block", lib.write_data_block, e) && ok;
    ok = bind_symbol(h, "archive_write_finish_entry", lib.write_finish_entry, e) && ok;
    ok = bind_symbol(h, "archive_write_close", lib.write_close, e) && ok;
    ok = bind_symbol(h, "archive_write_free", lib.write_free, e) && ok;
    ok = bind_symbol(h, "archive_error_string", lib.error_string, e) && ok;
    ok = bind_symbol(h, "archive_entry_pathname", lib.entry_pathname, e) && ok;
    ok = bind_symbol(h, "archive_entry_set_pathname", lib.entry_set_pathname, e) && ok;
    ok = bind_symbol(h, "archive_entry_hardlink", lib.entry_hardlink, e) && ok;
    ok = bind_symbol(h, "archive_entry_set_hardlink", lib.entry_set_hardlink, e) && ok;
    ok = bind_symbol(h, "archive_entry_symlink", lib.entry_symlink, e) && ok;
    ok = bind_symbol(h, "archive_entry_size", lib.entry_size, e) && ok;
    ok = bind_symbol(h, "archive_entry_filetype", lib.entry_filetype, e) && ok;
    lib.loaded = ok;
  });
  return lib;
}

}  // namespace lemon::download
