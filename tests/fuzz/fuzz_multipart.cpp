// Fuzz target: multipart/form-data (audio/transcriptions and the image
// uploads), and the checks of those forms. The first line of the input is a
// Content-Type header value, the rest the body. Every part handed back must
// view into the body.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lemon/api/openai/image_form.h"
#include "lemon/api/openai/transcription_form.h"
#include "lemon/http/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::size_t nl = in.find('\n');
  if (nl == std::string_view::npos) {
    return 0;
  }
  std::string_view content_type = in.substr(0, nl);
  std::string_view body = in.substr(nl + 1);
  auto boundary = lemon::http::multipart_boundary(content_type);
  if (!boundary) {
    return 0;
  }
  auto parts = lemon::http::parse_multipart(body, *boundary);
  if (!parts.ok()) {
    return 0;
  }
  for (const auto& p : *parts) {
    if (!p.data.empty() && (p.data.data() < body.data() ||
                            p.data.data() + p.data.size() > body.data() + body.size())) {
      std::abort();
    }
  }
  (void)lemon::http::find_part(*parts, "file");
  (void)lemon::api::check_transcription_form(*parts);
  (void)lemon::api::check_image_form(lemon::ApiRoute::kImageEdits, *parts);
  (void)lemon::api::check_image_form(lemon::ApiRoute::kImageVariations, *parts);
  return 0;
}
