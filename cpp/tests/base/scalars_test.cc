#include "base/scalars.h"

#include <string>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(Scalars, IntegerAcceptsDecimalWithSurroundingSpace) {
  EXPECT_EQ(*ParseInteger("42"), int64_t{42});
  EXPECT_EQ(*ParseInteger(" 7\n"), int64_t{7});
  EXPECT_EQ(*ParseInteger("-1"), int64_t{-1});
  EXPECT_EQ(*ParseInteger("0"), int64_t{0});
}

TEST(Scalars, IntegerRejectsEverythingElse) {
  KDIST_EXPECT_ERROR(ParseInteger(""), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ParseInteger("   "), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ParseInteger("two"), StatusCode::kInvalidArgument, "is not an integer");
  KDIST_EXPECT_ERROR(ParseInteger("1.5"), StatusCode::kInvalidArgument, "is not an integer");
  KDIST_EXPECT_ERROR(ParseInteger("+1"), StatusCode::kInvalidArgument, "is not an integer");
  KDIST_EXPECT_ERROR(ParseInteger("0x10"), StatusCode::kInvalidArgument, "is not an integer");
  KDIST_EXPECT_ERROR(ParseInteger("1 2"), StatusCode::kInvalidArgument, "is not an integer");
  KDIST_EXPECT_ERROR(ParseInteger("99999999999999999999"), StatusCode::kInvalidArgument,
                     "64-bit range");
}

TEST(Scalars, DigitsAreStrict) {
  EXPECT_EQ(*ParseDigits("0"), uint64_t{0});
  EXPECT_EQ(*ParseDigits("007"), uint64_t{7});
  EXPECT_EQ(*ParseDigits("999999999999999999"), uint64_t{999999999999999999});
  KDIST_EXPECT_ERROR(ParseDigits(""), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ParseDigits(" 5"), StatusCode::kInvalidArgument,
                     "has \" \" at index 0 where a digit was expected");
  KDIST_EXPECT_ERROR(ParseDigits("5 "), StatusCode::kInvalidArgument,
                     "has \" \" at index 1 where a digit was expected");
  KDIST_EXPECT_ERROR(ParseDigits("-1"), StatusCode::kInvalidArgument,
                     "has \"-\" at index 0 where a digit was expected");
  KDIST_EXPECT_ERROR(ParseDigits("+1"), StatusCode::kInvalidArgument, "has \"+\" at index 0");
  KDIST_EXPECT_ERROR(ParseDigits("1_2"), StatusCode::kInvalidArgument, "has \"_\" at index 1");
  KDIST_EXPECT_ERROR(ParseDigits(std::string("1\0", 2)), StatusCode::kInvalidArgument,
                     "has \"\\x00\" at index 1");
  KDIST_EXPECT_ERROR(ParseDigits("1000000000000000000"), StatusCode::kInvalidArgument,
                     "has more than 18 digits");
  KDIST_EXPECT_ERROR(ParseDigits("99999999999999999999999"), StatusCode::kInvalidArgument,
                     "has more than 18 digits");
}

TEST(Scalars, Seconds) {
  EXPECT_EQ(*ParseSeconds("30"), 30.0);
  EXPECT_EQ(*ParseSeconds("2.5"), 2.5);
  EXPECT_EQ(*ParseSeconds("1e3"), 1000.0);
  KDIST_EXPECT_ERROR(ParseSeconds("inf"), StatusCode::kInvalidArgument, "not finite");
  KDIST_EXPECT_ERROR(ParseSeconds("nan"), StatusCode::kInvalidArgument, "not finite");
  KDIST_EXPECT_ERROR(ParseSeconds("-1"), StatusCode::kInvalidArgument, "negative");
  KDIST_EXPECT_ERROR(ParseSeconds("5s"), StatusCode::kInvalidArgument, "not a number");
  KDIST_EXPECT_ERROR(ParseSeconds(""), StatusCode::kInvalidArgument, "is empty");
}

TEST(Scalars, Bool) {
  for (const char* yes : {"1", "true", "TRUE", "Yes", "on", " on "}) {
    EXPECT_TRUE(*ParseBool(yes));
  }
  for (const char* no : {"0", "false", "False", "no", "OFF"}) {
    EXPECT_FALSE(*ParseBool(no));
  }
  KDIST_EXPECT_ERROR(ParseBool("maybe"), StatusCode::kInvalidArgument, "not a boolean");
  KDIST_EXPECT_ERROR(ParseBool(""), StatusCode::kInvalidArgument, "is empty");
}

}  // namespace
}  // namespace kdist
