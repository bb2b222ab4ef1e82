#include "text.h"

#include "testing/check.h"

namespace kdist {
namespace {

KDIST_TEST(Text, QuoteEscapesUnprintableBytes) {
  KDIST_EXPECT_EQ(Quote("abc"), std::string("\"abc\""));
  KDIST_EXPECT_EQ(Quote(std::string_view("a\0b", 3)), std::string("\"a\\x00b\""));
  KDIST_EXPECT_EQ(Quote("say \"hi\"\\"), std::string("\"say \\\"hi\\\"\\\\\""));
  KDIST_EXPECT_EQ(Quote("\x1b[31m\xff"), std::string("\"\\x1b[31m\\xff\""));
  KDIST_EXPECT_EQ(Quote("\n"), std::string("\"\\x0a\""));
}

KDIST_TEST(Text, QuoteCutsLongText) {
  KDIST_EXPECT_EQ(Quote("abcdef", 3), std::string("\"abc\"..."));
  KDIST_EXPECT_EQ(Quote("abc", 3), std::string("\"abc\""));
}

KDIST_TEST(Text, TrimRemovesAsciiWhitespaceOnly) {
  KDIST_EXPECT_EQ(std::string(Trim("  a b \t\n")), std::string("a b"));
  KDIST_EXPECT_EQ(std::string(Trim(" \t ")), std::string(""));
  KDIST_EXPECT_EQ(std::string(Trim("")), std::string(""));
}

KDIST_TEST(Text, SplitKeepsEmptyParts) {
  const auto parts = Split("a,,b", ',');
  KDIST_ASSERT_EQ(parts.size(), size_t{3});
  KDIST_EXPECT_EQ(std::string(parts[0]), std::string("a"));
  KDIST_EXPECT_EQ(std::string(parts[1]), std::string(""));
  KDIST_EXPECT_EQ(std::string(parts[2]), std::string("b"));
  KDIST_EXPECT_EQ(Split("", ',').size(), size_t{1});
  KDIST_EXPECT_EQ(Split("x,", ',').size(), size_t{2});
}

KDIST_TEST(Text, JoinAndLower) {
  KDIST_EXPECT_EQ(Join({"a", "b", "c"}, ", "), std::string("a, b, c"));
  KDIST_EXPECT_EQ(Join({}, ", "), std::string(""));
  KDIST_EXPECT_EQ(Lower("GpU:3"), std::string("gpu:3"));
}

}  // namespace
}  // namespace kdist
