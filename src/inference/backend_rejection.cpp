#include "lemon/inference/backend_rejection.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "lemon/inference/sse_scanner.h"

namespace lemon::inference {

namespace {

// Lower-case texts of template refusals (llama.cpp's models/templates and
// the templates shipped with common GGUFs).
constexpr std::string_view kTemplateTexts[] = {
    "jinja exception",
    "roles must alternate",
    "system message must be at the beginning",
    "cannot pass both content and thinking",
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

BackendRejection classify_backend_rejection(int status, std::string_view body) {
  if (status != 400 && status != 500) {
    return BackendRejection::kOther;
  }
  const auto envelope = normalize_backend_error(body, status);
  const auto& message = envelope["error"]["message"];
  if (!message.is_string()) {
    return BackendRejection::kOther;
  }
  const std::string text = lower(message.get_ref<const std::string&>());
  for (auto marker : kTemplateTexts) {
    if (text.find(marker) != std::string::npos) {
      return BackendRejection::kTemplate;
    }
  }
  return BackendRejection::kOther;
}

}  // namespace lemon::inference
