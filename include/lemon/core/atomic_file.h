// Replacing a small file atomically: the text goes to a temporary name in
// the same folder, then rename(2) puts it in place, so a reader sees the old
// file or the new one, never half of either. Used for user_models.json and
// the hub cache's refs.
//
// Thread-safety: safe from any thread; concurrent writers of one path leave
// one of their texts (the last rename wins).
#pragma once

#include <filesystem>
#include <string_view>

#include "lemon/core/error.h"

namespace lemon {

// Creates the parent folders as needed. kInternal naming the path on failure
// (the temporary file is removed).
Status write_file_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace lemon
