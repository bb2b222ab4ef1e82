#include "config/policies.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(ConsistencyPolicy, ParsesItsThreeNames) {
  Result<ConsistencyPolicy> strict = ParseConsistencyPolicy(" Strict ");
  KDIST_ASSERT_OK(strict);
  EXPECT_EQ(*strict, ConsistencyPolicy::kStrict);
  EXPECT_EQ(ConsistencyPolicyName(ConsistencyPolicy::kOff), "off");
  KDIST_EXPECT_ERROR(ParseConsistencyPolicy("loose"), StatusCode::kInvalidArgument,
                     "is \"loose\"; expected strict, warn or off");
}

TEST(PeerFailurePolicy, ParsesItsTwoNames) {
  Result<PeerFailurePolicy> ignore = ParsePeerFailurePolicy(" IGNORE ");
  KDIST_ASSERT_OK(ignore);
  EXPECT_EQ(*ignore, PeerFailurePolicy::kIgnore);
  EXPECT_EQ(PeerFailurePolicyName(PeerFailurePolicy::kExit), "exit");
  EXPECT_EQ(PeerFailurePolicyName(*ignore), "ignore");
  KDIST_EXPECT_ERROR(ParsePeerFailurePolicy("retry"), StatusCode::kInvalidArgument,
                     "is \"retry\"; expected exit or ignore");
}

}  // namespace
}  // namespace kdist
