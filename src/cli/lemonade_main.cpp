// lemonade: Lemonade 11's command-line client of lemonade-router (docs/cli.md).
#include "lemon/cli/lemonade_app.h"

int main(int argc, char** argv) {
  return lemon::cli::run_lemonade(argc, argv);
}
