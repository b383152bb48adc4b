// URL pieces for the download layer: percent-encoding of path segments
// (through libcurl's escaping), so file names with spaces or '#' survive.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lemon::download {

// Percent-encodes every byte of `segment` except RFC 3986 unreserved ones.
std::string escape_segment(std::string_view segment);

// Escapes each '/'-separated segment of `path`, keeping the slashes.
std::string escape_path(std::string_view path);

// An absolute URL's parts as libcurl's URL parser reads them ("" for a part
// it lacks; the port only when written). nullopt when it is no URL, or when
// libcurl cannot be loaded (`why` says which).
struct UrlParts {
  std::string scheme, user, host, port, path, query, fragment;
};
std::optional<UrlParts> split_url(std::string_view url, std::string* why = nullptr);

}  // namespace lemon::download
