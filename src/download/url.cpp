#include "lemon/download/url.h"

#include "curl_library.h"

namespace lemon::download {

std::string escape_segment(std::string_view segment) {
  if (segment.empty()) {
    return {};
  }
  if (!curl_library().loaded) {
    return std::string(segment);  // no download can happen either
  }
  // libcurl accepts a null handle here since 7.82.
  char* escaped =
      curl_library().easy_escape(nullptr, segment.data(), static_cast<int>(segment.size()));
  if (escaped == nullptr) {
    return std::string(segment);
  }
  std::string out(escaped);
  curl_library().free(escaped);
  return out;
}

std::string escape_path(std::string_view path) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    std::size_t slash = path.find('/', start);
    out += escape_segment(path.substr(start, slash - start));
    if (slash == std::string_view::npos) {
      break;
    }
    out += '/';
    start = slash + 1;
  }
  return out;
}

}  // namespace lemon::download
