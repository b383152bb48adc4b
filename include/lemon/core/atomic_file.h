// Replacing a small file atomically: the text goes to a temporary name in
// the same folder, then rename(2) puts it in place, so a reader sees the old
// file or the new one, never half of either. Used for user_models.json,
// recipe_options.json, presets.json and the hub cache's refs.
//
// Thread-safety: safe from any thread; concurrent writers of one path leave
// one of their texts (the last rename wins).
#pragma once

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon {

// Creates the parent folders as needed. kInternal naming the path on failure
// (the temporary file is removed).
Status write_file_atomically(const std::filesystem::path& path, std::string_view text);

// Reads a JSON object file that is about to be rewritten: a missing or blank
// file is an empty object; an unreadable or malformed one is kInternal (a
// file the user broke is never overwritten).
Result<nlohmann::ordered_json> read_json_object_for_update(const std::filesystem::path& path);

}  // namespace lemon
