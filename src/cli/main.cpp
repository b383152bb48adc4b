// lemonade-server: the command-line client of lemonade-router (docs/cli.md).
#include "lemon/cli/cli_app.h"

int main(int argc, char** argv) {
  return lemon::cli::run_cli(argc, argv);
}
