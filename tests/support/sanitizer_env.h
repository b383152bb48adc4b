// The sanitizer runtime options of this test process (ASAN_OPTIONS and its
// kin, set by scripts/run-sanitizers), for a child started with an
// environment of its own: the router, and through it the fake backends, and
// the CLI. Without them a child reads no suppressions and prints its report
// to stderr instead of the reports folder that fails the run.
#pragma once

#include <cstdlib>
#include <map>
#include <string>

namespace lemon::testing {

// `env` plus each sanitizer variable this process has and `env` lacks.
inline std::map<std::string, std::string> with_sanitizer_options(
    std::map<std::string, std::string> env) {
  for (const char* name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && env.count(name) == 0) {
      env.emplace(name, value);
    }
  }
  return env;
}

}  // namespace lemon::testing
