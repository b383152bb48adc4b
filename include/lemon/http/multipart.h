// multipart/form-data parsing (RFC 7578) for upload routes such as
// audio/transcriptions. Parts view into the body; nothing is copied.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/error.h"

namespace lemon::http {

struct MultipartPart {
  std::string name;          // form field name
  std::string filename;      // "" when the part is not a file
  std::string content_type;  // "" when absent
  std::string_view data;     // views into the parsed body
};

// The boundary parameter of a multipart Content-Type, or nullopt.
std::optional<std::string> multipart_boundary(std::string_view content_type);

// Parses `body` with `boundary`. kInvalidRequest on malformed input.
Result<std::vector<MultipartPart>> parse_multipart(std::string_view body,
                                                   std::string_view boundary);

// First part called `name`, or nullptr.
const MultipartPart* find_part(const std::vector<MultipartPart>& parts, std::string_view name);

}  // namespace lemon::http
