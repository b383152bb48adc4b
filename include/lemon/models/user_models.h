// The two JSON files of the cache dir the catalogue reads: user_models.json
// (models registered by the user, exposed as "user.<key>") and
// recipe_options.json (saved per-model load options, keyed by full name).
//
// WatchedJsonFile re-reads its file only when a stat shows it changed
// (existence, inode, size or mtime with nanoseconds), so calling refresh()
// on every lookup is cheap. A missing, unreadable or malformed file reads as
// an empty object; problems are logged, never fatal.
//
// Ownership/thread-safety: WatchedJsonFile is a plain value; callers
// serialize refresh() and value(). parse_user_models is a pure function.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/models/model_info.h"

namespace lemon {

class WatchedJsonFile {
 public:
  explicit WatchedJsonFile(std::filesystem::path path) : path_(std::move(path)) {}

  // Stats the file and re-reads it when it changed since the last call (the
  // first call always reads). Returns true when value() may have changed.
  bool refresh();

  // The parsed top-level object, in file order; empty when the file is
  // missing, unreadable, malformed or not an object.
  const nlohmann::ordered_json& value() const { return value_; }
  // Why the file read as empty ("not valid JSON", ...); "" when it is
  // missing or was read.
  const std::string& problem() const { return problem_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Stamp {
    bool exists = false;
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    std::int64_t size = 0;
    std::int64_t mtime_sec = 0;
    std::int64_t mtime_nsec = 0;
    bool operator==(const Stamp&) const = default;
  };
  Stamp stat_now() const;

  std::filesystem::path path_;
  bool loaded_ = false;
  Stamp stamp_;
  nlohmann::ordered_json value_ = nlohmann::ordered_json::object();
  std::string problem_;
};

// The entries of user_models.json as "user.<key>" models, in file order.
// Entries that do not parse are logged and skipped.
std::vector<ModelInfo> parse_user_models(const nlohmann::ordered_json& file);

}  // namespace lemon
