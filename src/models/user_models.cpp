#include "lemon/models/user_models.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "lemon/core/log.h"
#include "lemon/models/registry_entry.h"

namespace lemon {

WatchedJsonFile::Stamp WatchedJsonFile::stat_now() const {
  Stamp s;
  struct stat st {};
  if (path_.empty() || ::stat(path_.c_str(), &st) != 0) {
    return s;
  }
  s.exists = true;
  s.dev = static_cast<std::uint64_t>(st.st_dev);
  s.ino = static_cast<std::uint64_t>(st.st_ino);
  s.size = static_cast<std::int64_t>(st.st_size);
  s.mtime_sec = static_cast<std::int64_t>(st.st_mtim.tv_sec);
  s.mtime_nsec = static_cast<std::int64_t>(st.st_mtim.tv_nsec);
  return s;
}

bool WatchedJsonFile::refresh() {
  Stamp now = stat_now();
  if (loaded_ && now == stamp_) {
    return false;
  }
  loaded_ = true;
  stamp_ = now;
  value_ = nlohmann::ordered_json::object();
  problem_.clear();
  if (!now.exists) {
    return true;
  }
  auto log = logger("models");
  std::ifstream in(path_);
  if (!in) {
    problem_ = "cannot be read";
    log->warn("cannot read {}; treating it as empty", path_.string());
    return true;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    problem_ = "is not valid JSON";
    log->warn("{} is not valid JSON; treating it as empty", path_.string());
  } else if (!parsed.is_object()) {
    problem_ = "is not a JSON object";
    log->warn("{} is not a JSON object; treating it as empty", path_.string());
  } else {
    value_ = std::move(parsed);
    log->debug("loaded {} ({} entries)", path_.string(), value_.size());
  }
  return true;
}

std::vector<ModelInfo> parse_user_models(const nlohmann::ordered_json& file) {
  std::vector<ModelInfo> out;
  if (!file.is_object()) {
    return out;
  }
  for (const auto& [key, entry] : file.items()) {
    auto info = parse_registry_entry("user." + key, entry, ModelSource::kUser);
    if (!info.ok()) {
      logger("models")->warn("user_models.json: skipping entry: {}", info.error().message());
      continue;
    }
    out.push_back(std::move(info).value());
  }
  return out;
}

}  // namespace lemon
