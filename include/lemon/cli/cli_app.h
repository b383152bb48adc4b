// run_cli(): lemonade-server's entry point. Parses the command line (Lemonade
// 9.4.1's subcommands and options, plus ps/load/unload/logs/pin/unpin), runs one
// command against the router's HTTP API and returns the process exit code:
// 0 success, 1 a failure (one line on stderr), 2 a usage error.
#pragma once

namespace lemon::cli {

int run_cli(int argc, char** argv);

}  // namespace lemon::cli
