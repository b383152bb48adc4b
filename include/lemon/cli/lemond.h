// run_lemond(): Lemonade 11's server command line, `lemond [cache_dir]
// [--port N] [--host H] [--broadcast|--no-broadcast]`, as a name for
// lemonade-router (docs/cli.md). It
//   - makes `cache_dir` the router's LEMONADE_CACHE_DIR;
//   - saves --port and --host into config.json, as 11 does (the file the
//     router reads; when there is none, `<cache_dir>/config.json`, where 11
//     keeps it), checked as the router reads its settings, written
//     atomically;
//   - turns --broadcast/--no-broadcast into the router's LEMONADE_NO_BROADCAST
//     for this run only (11 does not save it);
//   - passes every other option to the router, and execs it (argv, no
//     shell): the process becomes the router, so a service manager's
//     signals reach it directly.
// Returns only on failure: 1 (one line on stderr), 2 for a usage error, 0
// after --help or --version.
//
// Thread-safety: called once, from main, before any thread starts.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::cli {

int run_lemond(int argc, char** argv);

// The config.json lemond saves --port/--host into (see above).
std::filesystem::path lemond_config_file();

// Saves `port` and/or `host` into `file` (other keys and their order kept).
Status save_listen_settings(const std::filesystem::path& file, std::optional<int> port,
                            const std::optional<std::string>& host);

}  // namespace lemon::cli
