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

TEST(AsciiLower, LowersOnlyAsciiLetters) {
  EXPECT_EQ(ascii_lower("Qwen3-0.6B-GGUF"), "qwen3-0.6b-gguf");
  EXPECT_EQ(ascii_lower("MMPROJ-F16.gguf"), "mmproj-f16.gguf");
  EXPECT_EQ(ascii_lower("\xC3\x89t\xC3\xA9"), "\xC3\x89t\xC3\xA9");  // "Été": UTF-8 bytes kept
  EXPECT_EQ(ascii_lower("@[`{"), "@[`{");                            // the bytes around A-Z
}

TEST(Join, PutsTheSeparatorBetweenItemsOnly) {
  EXPECT_EQ(join({"llamacpp", "flm", "whispercpp"}, ", "), "llamacpp, flm, whispercpp");
  EXPECT_EQ(join({"one"}, ", "), "one");
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"", ""}, "|"), "|");
}

}  // namespace
}  // namespace lemon
