// The router's settings given on a command line that takes them as options
// (lemonade-server serve/run/load, lemond, lemonade load/run/launch):
// which the user typed, as router arguments or as /load's fields. Options
// set only by their LEMONADE_* variable are not "given": the router reads
// the environment itself.
//
// Thread-safety: pure functions over a parsed CLI11 app.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace CLI {
class App;
}

namespace lemon::cli {

// True if `--name` appears among the command-line tokens (as "--name" or
// "--name=value").
bool option_given(const std::vector<std::string>& tokens, const std::string& name);

// The options of `sub` given in `tokens` (under any of their names), as
// router arguments ("--name=value", "--flag"), except those named in `skip`
// (long names without dashes).
std::vector<std::string> router_args_of(const CLI::App& sub, const std::vector<std::string>& tokens,
                                        const std::set<std::string>& skip);

// The load options given in `tokens`, as /load's fields (numbers as numbers).
nlohmann::json load_options_of(const CLI::App& sub, const std::vector<std::string>& tokens);

}  // namespace lemon::cli
