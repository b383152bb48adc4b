// Unpacking release archives through libarchive: any format
// and filter it reads (tar.gz, zip, ...), into a folder, with permission
// bits kept (executables stay executable).
//
// Refused, before anything is written for them: absolute entry paths, ".."
// components, symlinks whose target is absolute or leads outside the folder,
// hard links to outside it, and device, FIFO and socket entries. A refused
// or damaged archive fails with kInvalidArchive naming the entry; what was
// already written stays in `dest` for the caller to discard (installers
// unpack into a temporary folder).
//
// Thread-safety: free functions; concurrent calls on different folders are
// safe.
#pragma once

#include <filesystem>
#include <string_view>

#include "lemon/core/error.h"
#include "lemon/download/transfer.h"

namespace lemon::download {

// True when `entry` (an archive member path) stays inside the folder it is
// unpacked into: relative, no ".." component, not empty.
bool is_safe_entry_path(std::string_view entry);

// Unpacks `archive` into `dest` (created if missing). `cancelled` is polled
// between entries (kCancelled).
Status extract_archive(const std::filesystem::path& archive, const std::filesystem::path& dest,
                       const CancelledFn& cancelled = {});

}  // namespace lemon::download
