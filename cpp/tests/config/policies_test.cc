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

TEST(TlsPolicy, ParsesItsThreeNames) {
  Result<TlsPolicy> required = ParseTlsPolicy(" Required ");
  KDIST_ASSERT_OK(required);
  EXPECT_EQ(*required, TlsPolicy::kRequired);
  EXPECT_EQ(TlsPolicyName(TlsPolicy::kOff), "off");
  EXPECT_EQ(TlsPolicyName(TlsPolicy::kAuto), "auto");
  EXPECT_EQ(TlsPolicyName(*required), "required");
  KDIST_EXPECT_ERROR(ParseTlsPolicy("yes"), StatusCode::kInvalidArgument,
                     "is \"yes\"; expected off, auto or required");
}

}  // namespace
}  // namespace kdist
