#include "lemon/download/url.h"

#include <memory>

#include "curl_library.h"

namespace lemon::download {
namespace {

struct CurlUrlDeleter {
  void operator()(CURLU* u) const { curl_library().url_cleanup(u); }
};

std::string url_part(CURLU* url, CURLUPart part) {
  char* text = nullptr;
  if (curl_library().url_get(url, part, &text, 0) != CURLUE_OK || text == nullptr) {
    return {};
  }
  std::string out(text);
  curl_library().free(text);
  return out;
}

}  // namespace

std::optional<UrlParts> split_url(std::string_view text, std::string* why) {
  const auto& curl = curl_library();
  if (!curl.loaded) {
    if (why != nullptr) {
      *why = curl.error;
    }
    return std::nullopt;
  }
  std::unique_ptr<CURLU, CurlUrlDeleter> url(curl.url());
  const std::string copy(text);
  if (!url || curl.url_set(url.get(), CURLUPART_URL, copy.c_str(), 0) != CURLUE_OK) {
    if (why != nullptr) {
      *why = "not a URL";
    }
    return std::nullopt;
  }
  UrlParts out;
  out.scheme = url_part(url.get(), CURLUPART_SCHEME);
  out.user = url_part(url.get(), CURLUPART_USER);
  out.host = url_part(url.get(), CURLUPART_HOST);
  out.port = url_part(url.get(), CURLUPART_PORT);
  out.path = url_part(url.get(), CURLUPART_PATH);
  out.query = url_part(url.get(), CURLUPART_QUERY);
  out.fragment = url_part(url.get(), CURLUPART_FRAGMENT);
  return out;
}

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
