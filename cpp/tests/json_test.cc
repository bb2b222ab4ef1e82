#include "json.h"

#include "testing/status_matchers.h"
#include "testing/random_text.h"

namespace kdist {
namespace {

TEST(Json, ParsesTfConfig) {
  auto value = ParseJson(R"({"cluster": {"chief": ["host0:2222"],
                            "worker": ["host1:2222", "host2:2222"]},
                            "task": {"type": "worker", "index": 1}})");
  KDIST_ASSERT_OK(value);
  ASSERT_TRUE(value->is_object());
  const JsonValue* cluster = value->Find("cluster");
  ASSERT_TRUE(cluster != nullptr && cluster->is_object());
  EXPECT_EQ(cluster->members().front().first, std::string("chief"));
  const JsonValue* workers = cluster->Find("worker");
  ASSERT_TRUE(workers != nullptr && workers->is_array());
  EXPECT_EQ(workers->items().size(), size_t{2});
  EXPECT_EQ(workers->items()[1].text(), std::string("host2:2222"));
  const JsonValue* index = value->Find("task")->Find("index");
  ASSERT_TRUE(index != nullptr);
  EXPECT_EQ(index->AsInteger().value_or(-1), int64_t{1});
  EXPECT_TRUE(value->Find("missing") == nullptr);
}

TEST(Json, ScalarsAndNumbers) {
  EXPECT_TRUE(ParseJson("null")->is_null());
  EXPECT_TRUE(ParseJson(" true ")->bool_value());
  EXPECT_FALSE(ParseJson("false")->bool_value());
  for (const char* number : {"0", "-0", "12", "-3", "1.5", "1e3", "2E-2", "-0.5e+7"}) {
    auto value = ParseJson(number);
    KDIST_EXPECT_OK(value);
    if (value.ok()) EXPECT_EQ(value->text(), std::string(number));
  }
  EXPECT_EQ(ParseJson("-7")->AsInteger().value_or(0), int64_t{-7});
  EXPECT_FALSE(ParseJson("3.0")->AsInteger().has_value());
  EXPECT_FALSE(ParseJson("3e0")->AsInteger().has_value());
  EXPECT_FALSE(ParseJson("99999999999999999999")->AsInteger().has_value());
  EXPECT_FALSE(ParseJson("\"3\"")->AsInteger().has_value());
}

TEST(Json, StringsDecodeEscapesAndUtf8) {
  EXPECT_EQ(ParseJson(R"("a\"b\\c\/d\n\t")")->text(), std::string("a\"b\\c/d\n\t"));
  EXPECT_EQ(ParseJson(R"("\u00e9")")->text(), std::string("\xc3\xa9"));
  EXPECT_EQ(ParseJson(R"("\ud83d\ude00")")->text(), std::string("\xf0\x9f\x98\x80"));
  EXPECT_EQ(ParseJson("\"\xe2\x82\xac\"")->text(), std::string("\xe2\x82\xac"));
  EXPECT_EQ(ParseJson(R"("\u0000")")->text(), std::string("\0", 1));
}

TEST(Json, RejectsWhatIsNotStrictJson) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "expected a value but found the end at byte 0"},
      {"{", "expected a string key but found the end at byte 1"},
      {"[1,]", "expected a value but found \"]\" at byte 3"},
      {"{\"a\":1,}", "expected a string key but found \"}\" at byte 7"},
      {"{\"a\" 1}", "expected ':' but found \"1\""},
      {"[1 2]", "expected ',' or ']' but found \"2\""},
      {"{\"a\":1 \"b\":2}", "expected ',' or '}' but found"},
      {"{\"a\":1,\"a\":2}", "duplicate key \"a\" at byte 7"},
      {"01", "leading zero in a number"},
      {"+1", "expected a value but found \"+\""},
      {"1.", "expected a digit after '.'"},
      {".5", "expected a value but found \".\""},
      {"1e", "expected a digit in the exponent"},
      {"-", "expected a digit but found the end"},
      {"NaN", "expected a value but found \"N\""},
      {"tru", "expected true but found \"t\""},
      {"nul", "expected null"},
      {"\"abc", "unterminated string"},
      {"\"a\\", "unterminated escape"},
      {"\"\\x\"", "unknown escape \\x"},
      {"\"\\u12zz\"", "expected a hex digit in \\u escape"},
      {"\"\\u12", "expected four hex digits after \\u"},
      {"\"\\udc00\"", "unpaired low surrogate"},
      {"\"\\ud800\"", "unpaired high surrogate"},
      {"\"\\ud800\\u0041\"", "high surrogate not followed by a low surrogate"},
      {"\"a\tb\"", "control character \"\\x09\" in a string"},
      {"\"\xc0\xaf\"", "invalid UTF-8 byte \"\\xc0\""},
      {"\"\xed\xa0\x80\"", "invalid UTF-8 byte"},
      {"\"\xf4\x90\x80\x80\"", "invalid UTF-8 byte"},
      {"\"\xe2\x82\"", "invalid UTF-8 byte"},
      {"\"\xff\"", "invalid UTF-8 byte"},
      {"{} x", "unexpected \"x\" after the value at byte 3"},
      {"// c\n1", "expected a value but found \"/\""},
  };
  for (const auto& [text, reason] : cases) {
    KDIST_EXPECT_ERROR(ParseJson(text), StatusCode::kInvalidArgument, reason);
  }
}

TEST(Json, DepthAndSizeAreBounded) {
  KDIST_EXPECT_OK(ParseJson(std::string(64, '[') + std::string(64, ']')));
  KDIST_EXPECT_ERROR(ParseJson(std::string(65, '[') + std::string(65, ']')),
                     StatusCode::kInvalidArgument, "nesting deeper than 64 levels");
  KDIST_EXPECT_ERROR(ParseJson(std::string(100000, '[')), StatusCode::kInvalidArgument,
                     "nesting deeper than 64 levels");
  JsonLimits small;
  small.max_bytes = 8;
  KDIST_EXPECT_OK(ParseJson("[1,2,3]", small));
  KDIST_EXPECT_ERROR(ParseJson("[1,2,3,4]", small), StatusCode::kInvalidArgument,
                     "9 bytes long, more than the 8 allowed");
}

TEST(Json, KindNames) {
  EXPECT_EQ(std::string(JsonKindName(ParseJson("[]")->kind())), std::string("an array"));
  EXPECT_EQ(std::string(JsonKindName(ParseJson("{}")->kind())), std::string("an object"));
  EXPECT_EQ(std::string(JsonKindName(ParseJson("1")->kind())), std::string("a number"));
}

}  // namespace
}  // namespace kdist

namespace kdist {
namespace {

// Any bytes: a value or an error, never a crash; deep nesting stays bounded.
TEST(Json, SurvivesArbitraryInput) {
  static constexpr char kAlphabet[] = "{}[]:,\"\\u0123456789abcdefEe.-+ \ttruefalsenull\xc3\xa9\xed\xa0";
  testing::RandomText random(0x2545f4914f6cdd1dull, std::string_view(kAlphabet, sizeof kAlphabet - 1), 10);
  JsonLimits limits;
  limits.max_depth = 8;
  for (int round = 0; round < 30000; ++round) {
    const std::string text = random.Next(40);
    auto value = ParseJson(text, limits);
    if (!value.ok()) {
      EXPECT_TRUE(value.status().code() == StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace kdist
