// Durations as people write them: a number of seconds ("300", "2.5", "-1")
// or Go-style text ("300ms", "5m", "1h30m"). Ollama's keep_alive takes
// both, and so does --keep-alive.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace lemon {

// A keep_alive value: negative means forever (-1 ms), 0 unload when idle.
// nullopt when malformed.
std::optional<std::chrono::milliseconds> parse_keep_alive(const std::string& text);
std::optional<std::chrono::milliseconds> parse_keep_alive_seconds(double seconds);

}  // namespace lemon
