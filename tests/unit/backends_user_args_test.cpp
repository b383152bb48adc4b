// user_args: splitting llamacpp_args like a shell word splitter (no
// expansion), recognising flags, refusing router-owned flags and matching
// flags by exact name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lemon/backends/user_args.h"

namespace lemon {
namespace {

using Args = std::vector<std::string>;

Args split_ok(std::string_view text) {
  auto r = split_user_args(text);
  EXPECT_TRUE(r.ok()) << "split_user_args(" << text << ") failed: " << r.error().message();
  return r.ok() ? *r : Args{};
}

// ---- split_user_args ------------------------------------------------------

TEST(SplitUserArgs, EmptyAndBlankGiveNoWords) {
  EXPECT_EQ(split_ok(""), Args{});
  EXPECT_EQ(split_ok("   "), Args{});
  EXPECT_EQ(split_ok(" \t\n "), Args{});
}

TEST(SplitUserArgs, WhitespaceRunsSeparateWords) {
  EXPECT_EQ(split_ok("-np 2"), (Args{"-np", "2"}));
  EXPECT_EQ(split_ok("  -np \t\t 2   --no-mmap\n"), (Args{"-np", "2", "--no-mmap"}));
}

TEST(SplitUserArgs, SingleQuotesAreLiteral) {
  EXPECT_EQ(split_ok("--chat-template 'a b  c'"), (Args{"--chat-template", "a b  c"}));
  // Nothing is special inside single quotes: not \, not ".
  EXPECT_EQ(split_ok(R"('a\"b\\c')"), (Args{R"(a\"b\\c)"}));
}

TEST(SplitUserArgs, DoubleQuotesAllowEscapedQuoteAndBackslash) {
  EXPECT_EQ(split_ok(R"(--alias "my \"fast\" model")"), (Args{"--alias", R"(my "fast" model)"}));
  EXPECT_EQ(split_ok(R"("a\\b")"), (Args{R"(a\b)"}));
  // Other backslashes inside double quotes stay as written.
  EXPECT_EQ(split_ok(R"("a\nb")"), (Args{R"(a\nb)"}));
  // Single quotes inside double quotes are ordinary characters.
  EXPECT_EQ(split_ok(R"("it's")"), (Args{"it's"}));
}

TEST(SplitUserArgs, BackslashOutsideQuotesEscapesNextCharacter) {
  EXPECT_EQ(split_ok(R"(a\ b c)"), (Args{"a b", "c"}));
  EXPECT_EQ(split_ok(R"(\"x\")"), (Args{R"("x")"}));
  EXPECT_EQ(split_ok(R"(\'x)"), (Args{"'x"}));
  EXPECT_EQ(split_ok(R"(a\\b)"), (Args{R"(a\b)"}));
}

TEST(SplitUserArgs, QuotedPartsJoinAdjacentText) {
  EXPECT_EQ(split_ok(R"(--x="a b"c'd e')"), (Args{"--x=a bcd e"}));
}

TEST(SplitUserArgs, EmptyQuotesMakeAnEmptyWord) {
  EXPECT_EQ(split_ok("--alias '' x"), (Args{"--alias", "", "x"}));
  EXPECT_EQ(split_ok(R"(--alias "")"), (Args{"--alias", ""}));
}

TEST(SplitUserArgs, UnterminatedQuotesAreInvalidUserArgs) {
  for (std::string_view text :
       {std::string_view("--alias 'abc"), std::string_view(R"(--alias "abc)"),
        std::string_view(R"("abc\")"), std::string_view("'"), std::string_view(R"(a "b c)")}) {
    auto r = split_user_args(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidUserArgs) << text;
    EXPECT_EQ(r.error().param(), "llamacpp_args") << text;
    EXPECT_NE(r.error().message().find("quote"), std::string::npos) << r.error().message();
  }
}

// ---- flag_name --------------------------------------------------------------

TEST(FlagName, FlagsAndFlagsWithValues) {
  EXPECT_EQ(flag_name("--ctx-size"), "--ctx-size");
  EXPECT_EQ(flag_name("--ctx-size=8"), "--ctx-size");
  EXPECT_EQ(flag_name("--port=9"), "--port");
  EXPECT_EQ(flag_name("-ngl"), "-ngl");
  EXPECT_EQ(flag_name("-c"), "-c");
  EXPECT_EQ(flag_name("--chat-template=a=b"), "--chat-template");
}

TEST(FlagName, NonFlagsAreEmpty) {
  EXPECT_EQ(flag_name("value"), "");
  EXPECT_EQ(flag_name(""), "");
  EXPECT_EQ(flag_name("-"), "");
  EXPECT_EQ(flag_name("-1"), "");
  EXPECT_EQ(flag_name("-42"), "");
  EXPECT_EQ(flag_name("-.5"), "");
  EXPECT_EQ(flag_name("8"), "");
  EXPECT_EQ(flag_name("a-b"), "");
}

// ---- check_reserved_flags ----------------------------------------------------

TEST(CheckReservedFlags, AcceptsArgsWithoutReservedFlags) {
  EXPECT_TRUE(check_reserved_flags({}, {"--port"}).ok());
  EXPECT_TRUE(check_reserved_flags({"-np", "2", "--seed", "-1"}, {"--port", "-m"}).ok());
  // A reserved flag's name as a *value* prefix or longer flag is not the flag.
  EXPECT_TRUE(check_reserved_flags({"--portable", "--port-x=1"}, {"--port"}).ok());
}

TEST(CheckReservedFlags, NamesTheReservedFlag) {
  auto s = check_reserved_flags({"-np", "2", "--port", "9"}, {"-m", "--port"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidUserArgs);
  EXPECT_EQ(s.error().param(), "llamacpp_args");
  EXPECT_NE(s.error().message().find("'--port'"), std::string::npos) << s.error().message();
}

TEST(CheckReservedFlags, CatchesFlagEqualsValueForm) {
  auto s = check_reserved_flags({"--port=9"}, {"--port"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidUserArgs);
  EXPECT_NE(s.error().message().find("--port"), std::string::npos) << s.error().message();
}

TEST(CheckReservedFlags, NamesTheFirstOffendingFlag) {
  auto s = check_reserved_flags({"-c", "8", "-m", "x.gguf"}, {"-m", "-c"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("'-c'"), std::string::npos) << s.error().message();
  EXPECT_EQ(s.error().message().find("'-m'"), std::string::npos) << s.error().message();
}

// ---- has_any_flag -----------------------------------------------------------

TEST(HasAnyFlag, MatchesExactFlagNames) {
  EXPECT_TRUE(has_any_flag({"--keep", "4"}, {"--keep"}));
  EXPECT_TRUE(has_any_flag({"--keep=4"}, {"--keep"}));
  EXPECT_TRUE(has_any_flag({"-np", "2", "--no-webui"}, {"--webui", "--no-webui"}));
}

TEST(HasAnyFlag, DoesNotMatchSubstringsOrValues) {
  EXPECT_FALSE(has_any_flag({"--keep-foo", "1"}, {"--keep"}));
  EXPECT_FALSE(has_any_flag({"--kee"}, {"--keep"}));
  EXPECT_FALSE(has_any_flag({"--no-jinja-x"}, {"--jinja", "--no-jinja"}));
  // A word that merely spells the flag without the dashes is a value.
  EXPECT_FALSE(has_any_flag({"--alias", "keep"}, {"--keep"}));
  EXPECT_FALSE(has_any_flag({}, {"--keep"}));
  EXPECT_FALSE(has_any_flag({"--keep"}, {}));
}

}  // namespace
}  // namespace lemon
