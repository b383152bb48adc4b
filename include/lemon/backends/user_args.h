// User-supplied backend arguments (`llamacpp_args`): splitting a string into
// argv honouring quotes, and refusing flags the router owns.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/error.h"

namespace lemon {

// Splits like a POSIX shell word splitter without expansion: whitespace
// separates words; '...' is literal; "..." allows \" and \\; a backslash
// outside quotes escapes the next character. An unterminated quote is
// kInvalidUserArgs (param "llamacpp_args").
Result<std::vector<std::string>> split_user_args(std::string_view text);

// The flag part of an argument: "--ctx-size=8" -> "--ctx-size"; non-flags
// (values, "-" alone, negative numbers) -> "".
std::string flag_name(std::string_view arg);

// kInvalidUserArgs naming the first argument whose flag is in `reserved`.
Status check_reserved_flags(const std::vector<std::string>& args,
                            const std::vector<std::string>& reserved);

// True when `args` contains any of `flags` as a flag (exact name, not a
// substring: "--keep" does not match "--keep-foo").
bool has_any_flag(const std::vector<std::string>& args, const std::vector<std::string>& flags);

}  // namespace lemon
