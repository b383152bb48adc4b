#include "lemon/core/log.h"
#include "lemon/core/mutex.h"

#include <array>

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace lemon {
namespace {

constexpr const char* kPattern = "%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%n] %v";

struct LogState {
  Mutex mu;
  std::shared_ptr<spdlog::sinks::dist_sink_mt> sink LEMON_GUARDED_BY(mu);  // (the pointer)
  spdlog::level::level_enum level = spdlog::level::info;
  SharedMutex tap_mu;
  OutputTap tap LEMON_GUARDED_BY(tap_mu);
};

LogState& state() {
  static LogState s;
  return s;
}

void ensure_sink(LogState& s) LEMON_REQUIRES(s.mu) {
  if (!s.sink) {
    s.sink = std::make_shared<spdlog::sinks::dist_sink_mt>();
    s.sink->add_sink(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    s.sink->set_pattern(kPattern);
  }
}

constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 6> kLevels = {{
    {"critical", spdlog::level::critical},
    {"error", spdlog::level::err},
    {"warning", spdlog::level::warn},
    {"info", spdlog::level::info},
    {"debug", spdlog::level::debug},
    {"trace", spdlog::level::trace},
}};

spdlog::level::level_enum to_spdlog(std::string_view level) {
  for (const auto& [name, value] : kLevels) {
    if (name == level) {
      return value;
    }
  }
  return spdlog::level::info;
}

}  // namespace

bool is_valid_log_level(std::string_view level) {
  for (const auto& [name, value] : kLevels) {
    if (name == level) {
      return true;
    }
  }
  return false;
}

void init_logging(std::string_view level) {
  auto& s = state();
  MutexLock lock(s.mu);
  ensure_sink(s);
  s.level = to_spdlog(level);
  spdlog::set_pattern(kPattern);
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(s.level); });
}

void set_log_level(std::string_view level) {
  auto& s = state();
  MutexLock lock(s.mu);
  s.level = to_spdlog(level);
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(s.level); });
}

std::string current_log_level() {
  auto& s = state();
  MutexLock lock(s.mu);
  for (const auto& [name, value] : kLevels) {
    if (value == s.level) {
      return std::string(name);
    }
  }
  return "info";
}

void add_log_sink(const spdlog::sink_ptr& sink) {
  auto& s = state();
  MutexLock lock(s.mu);
  ensure_sink(s);
  s.sink->add_sink(sink);
}

void remove_log_sink(const spdlog::sink_ptr& sink) {
  auto& s = state();
  MutexLock lock(s.mu);
  if (s.sink) {
    s.sink->remove_sink(sink);
  }
}

std::shared_ptr<spdlog::logger> logger(const std::string& component) {
  auto& s = state();
  MutexLock lock(s.mu);
  if (auto existing = spdlog::get(component)) {
    return existing;
  }
  ensure_sink(s);
  auto created = std::make_shared<spdlog::logger>(component, s.sink);
  created->set_level(s.level);
  created->set_pattern(kPattern);
  spdlog::register_logger(created);
  return created;
}

void set_output_tap(OutputTap tap) {
  auto& s = state();
  SharedMutexLock lock(s.tap_mu);
  s.tap = std::move(tap);
}

void tap_child_output(std::string_view model, std::string_view line) {
  auto& s = state();
  ReaderLock lock(s.tap_mu);
  if (s.tap) {
    s.tap(model, line);
  }
}

}  // namespace lemon
