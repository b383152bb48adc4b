// Logging: one spdlog logger per component ("router", "http", "process",
// "backend", "models", "app"), all writing through one shared sink at one
// level. That sink fans out to stderr and to any sink added later (the log
// stream's ring). Request bodies are never logged above debug.
//
// Backend output lines reach stderr only at debug level, but every line is
// also handed to the output tap (the log stream keeps them all, tagged with
// their model).
//
// Thread-safety: init_logging() once from main before other threads start;
// everything else from any thread afterwards.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace lemon {

// Levels as accepted by --log-level.
bool is_valid_log_level(std::string_view level);  // critical error warning info debug trace

// Sets up the shared sink and the level for every component logger.
void init_logging(std::string_view level);

// Changes the level of every component logger at run time (POST /log-level).
// REQUIRES: is_valid_log_level(level).
void set_log_level(std::string_view level);
std::string current_log_level();

// Adds a sink that receives every line the loggers pass (at their level);
// remove it before whatever it writes to goes away.
void add_log_sink(const spdlog::sink_ptr& sink);
void remove_log_sink(const spdlog::sink_ptr& sink);

// The logger for `component`; created on first use with the shared sink.
std::shared_ptr<spdlog::logger> logger(const std::string& component);

// Where backend output lines go besides the debug log: (model, line). One
// tap; set at startup, cleared with an empty function.
using OutputTap = std::function<void(std::string_view model, std::string_view line)>;
void set_output_tap(OutputTap tap);
void tap_child_output(std::string_view model, std::string_view line);

}  // namespace lemon
