// trim_ows and trim_whitespace (core/text.h).
#include "lemon/core/text.h"

#include <gtest/gtest.h>

namespace lemon {
namespace {

TEST(TrimOws, DropsSpacesAndTabsOnBothSidesOnly) {
  EXPECT_EQ(trim_ows(" \t text/plain \t"), "text/plain");
  EXPECT_EQ(trim_ows("a b"), "a b");
  EXPECT_EQ(trim_ows("\r\nx\r\n"), "\r\nx\r\n");  // CR and LF are not OWS
  EXPECT_EQ(trim_ows(" \t "), "");
  EXPECT_EQ(trim_ows(""), "");
}

TEST(TrimWhitespace, DropsEveryAsciiSpaceOnBothSides) {
  EXPECT_EQ(trim_whitespace("\n\t hf_token \r\n\v\f"), "hf_token");
  EXPECT_EQ(trim_whitespace("two words"), "two words");
  EXPECT_EQ(trim_whitespace(" \r\n\t"), "");
}

}  // namespace
}  // namespace lemon
