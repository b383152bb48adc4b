// URL pieces for the download layer: percent-encoding of path segments
// (through libcurl's escaping), so file names with spaces or '#' survive.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace lemon::download {

// Percent-encodes every byte of `segment` except RFC 3986 unreserved ones.
std::string escape_segment(std::string_view segment);

// Escapes each '/'-separated segment of `path`, keeping the slashes.
std::string escape_path(std::string_view path);

}  // namespace lemon::download
