// Free-space check before a download starts: the bytes left to
// fetch plus a margin must fit on the file system that will hold them.
//
// Thread-safety: free functions, safe from any thread.
#pragma once

#include <cstdint>
#include <filesystem>

#include "lemon/core/error.h"

namespace lemon::download {

// Margin kept free beyond the download: max(256 MiB, 1% of the download).
std::uint64_t free_space_margin(std::uint64_t bytes_needed);

// Bytes available to an unprivileged user on the file system of `dir` (the
// nearest existing ancestor is used when `dir` does not exist yet). nullopt
// when statvfs fails.
std::optional<std::uint64_t> free_bytes(const std::filesystem::path& dir);

// kInsufficientStorage naming the bytes needed (with margin) and free when
// `bytes_needed + margin` exceeds the free space. OK when it fits or when the
// free space cannot be determined. LEMONADE_DOWNLOAD_FREE_BYTES, when set,
// replaces the measured free space (tests).
Status check_free_space(const std::filesystem::path& dir, std::uint64_t bytes_needed);

}  // namespace lemon::download
