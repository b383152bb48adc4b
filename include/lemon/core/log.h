// Logging: one spdlog logger per component ("router", "http", "process",
// "backend", "models", "app"), all writing to stderr with the same sink and
// level. Request bodies are never logged above debug.
//
// Thread-safety: init_logging() once from main before other threads start;
// logger() from any thread afterwards.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace lemon {

// Levels as accepted by --log-level.
bool is_valid_log_level(std::string_view level);  // critical error warning info debug trace

// Sets up the shared sink and the level for every component logger.
void init_logging(std::string_view level);

// The logger for `component`; created on first use with the shared sink.
std::shared_ptr<spdlog::logger> logger(const std::string& component);

}  // namespace lemon
