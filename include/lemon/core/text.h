// Small text helpers shared by every layer: trimming HTTP's optional
// whitespace (RFC 9110 §5.6.3: space and horizontal tab) around header values
// and parameters, and any ASCII whitespace around what a file or a program
// printed; ASCII lower case; joining a list for a message.
//
// Thread-safety: pure functions; each view points into its argument.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lemon {

std::string_view trim_ows(std::string_view s);
std::string_view trim_whitespace(std::string_view s);

// `s` with A-Z turned into a-z; other bytes (UTF-8 included) unchanged.
std::string ascii_lower(std::string_view s);

// The first bytes of `s`, at most `max_bytes`, ending on a whole UTF-8
// character (a character cut by the bound is left out).
std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes);

// The pieces of `s` between `separator`s, in order: none for an empty `s`,
// and no empty piece after a final separator ("a,,b," -> "a", "", "b").
std::vector<std::string_view> split(std::string_view s, char separator);

// The items with `separator` between them: "a, b, c".
std::string join(const std::vector<std::string>& items, std::string_view separator);

}  // namespace lemon
