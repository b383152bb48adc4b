// main() for the test binaries: quiet logs unless LEMON_TEST_LOG_LEVEL says
// otherwise, then GoogleTest.
#include <cstdlib>

#include <gtest/gtest.h>

#include "lemon/core/log.h"

int main(int argc, char** argv) {
  const char* level = std::getenv("LEMON_TEST_LOG_LEVEL");
  lemon::init_logging(level != nullptr ? level : "warning");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
