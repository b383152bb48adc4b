#include "lemon/telemetry/footprint_file.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "lemon/core/atomic_file.h"
#include "lemon/core/log.h"

namespace lemon {
namespace {

constexpr std::int64_t kFootprintWriteStep = std::int64_t{1} << 20;

long long footprint_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

FootprintFile::FootprintFile(std::filesystem::path path) : path_(std::move(path)) {
  std::ifstream in(path_);
  if (!in) {
    return;  // none yet
  }
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || !j.contains("footprints") || !j["footprints"].is_array()) {
    logger("router")->warn("{} is not a footprints file; starting with none", path_.string());
    return;
  }
  MutexLock lock(mu_);
  for (const auto& e : j["footprints"]) {
    if (!e.is_object() || !e.value("model", nlohmann::json()).is_string() ||
        !e.value("measured", nlohmann::json()).is_object()) {
      continue;
    }
    Entry entry;
    entry.key = {e["model"].get<std::string>(), e.value("recipe", std::string()),
                 e.value("options", nlohmann::json::object()), e.value("device", std::string())};
    for (const auto& [device, bytes] : e["measured"].items()) {
      if (bytes.is_number_integer() && bytes.get<std::int64_t>() > 0) {
        entry.measured[device] = bytes.get<std::int64_t>();
      }
    }
    entry.updated_ms = e.value("updated_ms", 0LL);
    if (!entry.measured.empty()) {
      entries_.push_back(std::move(entry));
    }
  }
}

std::optional<DeviceBytes> FootprintFile::recall(const FootprintKey& key) const {
  MutexLock lock(mu_);
  for (const auto& e : entries_) {
    if (e.key == key) {
      return e.measured;
    }
  }
  return std::nullopt;
}

void FootprintFile::remember(const FootprintKey& key, const DeviceBytes& measured) {
  MutexLock lock(mu_);
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&key](const Entry& e) { return e.key == key; });
  Entry entry = it != entries_.end() ? std::move(*it) : Entry{key, {}, 0};
  if (it != entries_.end()) {
    entries_.erase(it);
  }
  // Written when a figure is new or grows by more than kFootprintWriteStep: RSS
  // moves by pages from one poll to the next.
  bool changed = false;
  for (const auto& [device, bytes] : measured) {
    auto& kept = entry.measured[device];
    changed = changed || kept == 0 || bytes > kept + kFootprintWriteStep;
    kept = std::max(kept, bytes);  // the peak
  }
  entry.updated_ms = footprint_now_ms();
  entries_.push_back(std::move(entry));  // the most recently measured last
  if (changed) {
    write_locked();
  }
}

std::optional<DeviceBytes> FootprintFile::last_of(const std::string& model) const {
  MutexLock lock(mu_);
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->key.model == model) {
      return it->measured;
    }
  }
  return std::nullopt;
}

void FootprintFile::write_locked() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : entries_) {
    nlohmann::json measured = nlohmann::json::object();
    for (const auto& [device, bytes] : e.measured) {
      measured[device] = bytes;
    }
    list.push_back({{"model", e.key.model},
                    {"recipe", e.key.recipe},
                    {"options", e.key.options},
                    {"device", e.key.device},
                    {"measured", std::move(measured)},
                    {"updated_ms", e.updated_ms}});
  }
  const nlohmann::json file = {{"version", 1}, {"footprints", std::move(list)}};
  if (Status written = write_file_atomically(path_, file.dump(2)); !written.ok()) {
    logger("router")->warn("cannot keep footprints in {}: {}", path_.string(),
                           written.error().message());
  }
}

}  // namespace lemon
