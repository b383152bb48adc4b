// lemond: Lemonade 11's name for lemonade-router (docs/cli.md).
#include "lemon/cli/lemond.h"

int main(int argc, char** argv) {
  return lemon::cli::run_lemond(argc, argv);
}
