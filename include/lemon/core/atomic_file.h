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

// Creates the parent folders as needed. On failure the temporary file is
// removed and the error names the path: kStorageReadOnly when the folder is
// read-only or not writable by this user (EROFS, EACCES, EPERM; a Kubernetes
// ConfigMap mount), kInsufficientStorage when the disk is full, kInternal
// otherwise.
Status write_file_atomically(const std::filesystem::path& path, std::string_view text);

// Reads a JSON object file that is about to be rewritten: a missing or blank
// file is an empty object; one that is not valid JSON, or not an object, is
// kConfigFileInvalid naming the file and, for a parse error, its line and
// column (a file the user broke is never overwritten); an unreadable one is
// kInternal.
Result<nlohmann::ordered_json> read_json_object_for_update(const std::filesystem::path& path);

}  // namespace lemon
