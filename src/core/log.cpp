#include "lemon/core/log.h"

#include <array>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace lemon {
namespace {

struct LogState {
  std::mutex mu;
  spdlog::sink_ptr sink;
  spdlog::level::level_enum level = spdlog::level::info;
};

LogState& state() {
  static LogState s;
  return s;
}

spdlog::level::level_enum to_spdlog(std::string_view level) {
  if (level == "critical") {
    return spdlog::level::critical;
  }
  if (level == "error") {
    return spdlog::level::err;
  }
  if (level == "warning") {
    return spdlog::level::warn;
  }
  if (level == "debug") {
    return spdlog::level::debug;
  }
  if (level == "trace") {
    return spdlog::level::trace;
  }
  return spdlog::level::info;
}

}  // namespace

bool is_valid_log_level(std::string_view level) {
  static constexpr std::array<std::string_view, 6> kLevels = {"critical", "error", "warning",
                                                              "info",     "debug", "trace"};
  for (auto l : kLevels) {
    if (l == level) {
      return true;
    }
  }
  return false;
}

void init_logging(std::string_view level) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (!s.sink) {
    s.sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  }
  s.level = to_spdlog(level);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%n] %v");
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(s.level); });
}

std::shared_ptr<spdlog::logger> logger(const std::string& component) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (auto existing = spdlog::get(component)) {
    return existing;
  }
  if (!s.sink) {
    s.sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  }
  auto created = std::make_shared<spdlog::logger>(component, s.sink);
  created->set_level(s.level);
  created->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%n] %v");
  spdlog::register_logger(created);
  return created;
}

}  // namespace lemon
