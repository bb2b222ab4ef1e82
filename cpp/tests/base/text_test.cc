#include "base/text.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(Text, QuoteEscapesUnprintableBytes) {
  EXPECT_EQ(Quote("abc"), std::string("\"abc\""));
  EXPECT_EQ(Quote(std::string_view("a\0b", 3)), std::string("\"a\\x00b\""));
  EXPECT_EQ(Quote("say \"hi\"\\"), std::string("\"say \\\"hi\\\"\\\\\""));
  EXPECT_EQ(Quote("\x1b[31m\xff"), std::string("\"\\x1b[31m\\xff\""));
  EXPECT_EQ(Quote("\n"), std::string("\"\\x0a\""));
}

TEST(Text, QuoteCutsLongText) {
  EXPECT_EQ(Quote("abcdef", 3), std::string("\"abc\"..."));
  EXPECT_EQ(Quote("abc", 3), std::string("\"abc\""));
}

TEST(Text, TrimRemovesAsciiWhitespaceOnly) {
  EXPECT_EQ(std::string(Trim("  a b \t\n")), std::string("a b"));
  EXPECT_EQ(std::string(Trim(" \t ")), std::string(""));
  EXPECT_EQ(std::string(Trim("")), std::string(""));
}

TEST(Text, SplitKeepsEmptyParts) {
  const auto parts = Split("a,,b", ',');
  ASSERT_EQ(parts.size(), size_t{3});
  EXPECT_EQ(std::string(parts[0]), std::string("a"));
  EXPECT_EQ(std::string(parts[1]), std::string(""));
  EXPECT_EQ(std::string(parts[2]), std::string("b"));
  EXPECT_EQ(Split("", ',').size(), size_t{1});
  EXPECT_EQ(Split("x,", ',').size(), size_t{2});
}

TEST(Text, JoinAndLower) {
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), std::string("a, b, c"));
  EXPECT_EQ(Join({}, ", "), std::string(""));
  EXPECT_EQ(Lower("GpU:3"), std::string("gpu:3"));
  EXPECT_EQ(Upper("SigTerm:3"), std::string("SIGTERM:3"));
}

TEST(Text, RelayTextQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(RelayText("2 of 4 \"joined\""), std::string("2 of 4 \"joined\""));
  EXPECT_EQ(RelayText("bell\x07"), std::string("\"bell\\x07\""));
  // Line breaks pass: process 0's tables span lines.
  EXPECT_EQ(RelayText("differ:\n  jax: \"1\""), std::string("differ:\n  jax: \"1\""));
}

TEST(Text, SafeTextQuotesOnlyWhatIsNotAName) {
  EXPECT_EQ(SafeText("node-1.a_b"), "node-1.a_b");
  EXPECT_EQ(SafeText("a b"), "\"a b\"");
  EXPECT_EQ(SafeText(""), "\"\"");
  EXPECT_EQ(SafeText("a:b", ":"), "a:b");
}

TEST(Text, HexTextWritesTwoDigitsABytes) {
  EXPECT_EQ(HexText(std::string("\x01\xab\x00", 3)), "01ab00");
  EXPECT_EQ(HexText(""), "");
}

TEST(Text, AlignedTablePadsEveryColumnButTheLast) {
  EXPECT_EQ(AlignedTable({{"a", "bb", "c"}, {"ccc", "d", "eeee"}}),
            "a    bb  c\n"
            "ccc  d   eeee\n");
  EXPECT_EQ(AlignedTable({}), "");
}

}  // namespace
}  // namespace kdist
