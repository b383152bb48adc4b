// Trimming text: HTTP's optional whitespace (RFC 9110 §5.6.3: space and
// horizontal tab) around header values and parameters, and any ASCII
// whitespace around what a file or a program printed.
//
// Thread-safety: pure functions; each view points into its argument.
#pragma once

#include <string_view>

namespace lemon {

std::string_view trim_ows(std::string_view s);
std::string_view trim_whitespace(std::string_view s);

}  // namespace lemon
