#include "base/status.h"

#include <string>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

Result<int> Half(int value) {
  if (value % 2 != 0) return InvalidArgument(std::to_string(value) + " is odd");
  return value / 2;
}

Result<int> Quarter(int value) {
  KDIST_ASSIGN_OR_RETURN(const int half, Half(value));
  KDIST_ASSIGN_OR_RETURN(const int quarter, Half(half));
  return quarter;
}

Status CheckQuarter(int value, int& out) {
  KDIST_ASSIGN_OR_RETURN(out, Quarter(value));
  return Status::Ok();
}

TEST(Result, HoldsAValueOrTheStatusThatExplainsWhyNot) {
  Result<int> half = Half(8);
  KDIST_ASSERT_OK(half);
  EXPECT_EQ(*half, 4);
  EXPECT_TRUE(half.status().ok());
  KDIST_EXPECT_ERROR(Half(3), StatusCode::kInvalidArgument, "3 is odd");
}

TEST(Result, FromAnOkStatusIsAnInternalErrorNotAnEmptySuccess) {
  const Result<int> result = Status::Ok();
  EXPECT_FALSE(result.ok());
  KDIST_EXPECT_ERROR(result, StatusCode::kInternal, "made from an OK status");
}

TEST(AssignOrReturn, AssignsOnSuccessAndReturnsTheFirstFailure) {
  Result<int> quarter = Quarter(12);
  KDIST_ASSERT_OK(quarter);
  EXPECT_EQ(*quarter, 3);
  KDIST_EXPECT_ERROR(Quarter(6), StatusCode::kInvalidArgument, "3 is odd");
  KDIST_EXPECT_ERROR(Quarter(5), StatusCode::kInvalidArgument, "5 is odd");
  int out = 0;
  KDIST_EXPECT_OK(CheckQuarter(20, out));
  EXPECT_EQ(out, 5);
  KDIST_EXPECT_ERROR(CheckQuarter(2, out), StatusCode::kInvalidArgument, "1 is odd");
  EXPECT_EQ(out, 5);  // unchanged by the failure
}

}  // namespace
}  // namespace kdist
