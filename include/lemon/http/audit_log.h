// The audit log of admin actions (docs/auth.md): one JSON
// line per request to an admin-scope route, answered or refused, with its
// time, key name, method, path, model and status. The file is rotated when
// it passes `rotate_bytes`: audit.jsonl becomes audit.jsonl.1 (and .1 .2,
// up to `keep` old files).
//
// Thread-safety: record() may be called from any thread.
#pragma once

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "lemon/core/mutex.h"

namespace lemon::http {

class AuditLog {
 public:
  explicit AuditLog(std::filesystem::path file, std::uint64_t rotate_bytes = 10u << 20,
                    int keep = 3);

  // Appends `line` (a JSON object) and a newline; rotates first when the
  // file is over its size. A failure to write is logged, never thrown.
  void record(const nlohmann::json& line);
  const std::filesystem::path& file() const { return file_; }

 private:
  const std::filesystem::path file_;
  const std::uint64_t rotate_bytes_;
  const int keep_;
  Mutex mu_;
};

}  // namespace lemon::http
