// LogRing: the router's recent log lines for GET /logs/stream and the
// dashboard. It keeps the last 10,000 lines: the router's own
// (as its loggers pass them, so POST /log-level applies) and every output
// line of every backend, tagged with its model.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/common.h>
#include <nlohmann/json.hpp>

#include "lemon/telemetry/broadcast.h"

namespace lemon::telemetry {

struct LogLine {
  std::int64_t time_ms = 0;  // Unix milliseconds
  std::string level;         // "info", ... ; "output" for a backend's own line
  std::string source;        // the logger ("router", "http", ...) or "backend"
  std::string model;         // backend output: the model it serves; else ""
  std::string text;

  // One line as the router prints it: "<time> <LEVEL> [<source>] <text>",
  // the source of a backend's line being "backend <model>".
  std::string formatted() const;
  nlohmann::json to_json(std::uint64_t seq) const;
};

class LogRing {
 public:
  using Stream = Broadcast<LogLine>;
  static constexpr std::size_t kKeptLines = 10000;

  LogRing() : stream_(kKeptLines, 20000) {}

  void add(LogLine line) { stream_.publish(std::move(line)); }
  // A backend's output line (the logging output tap).
  void add_output(std::string_view model, std::string_view text);

  std::shared_ptr<Stream::Follower> follow(std::optional<std::uint64_t> after,
                                           std::size_t backlog) {
    return stream_.follow(after, backlog);
  }
  int followers() const { return stream_.followers(); }
  void close() { stream_.close(); }

  // An spdlog sink that adds every line it receives to `ring` (which must
  // outlive it).
  static spdlog::sink_ptr make_sink(LogRing& ring);

 private:
  Stream stream_;
};

}  // namespace lemon::telemetry
