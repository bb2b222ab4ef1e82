#include "base/frame_mac.h"

#include <gtest/gtest.h>

#include "base/wire.h"
#include "testing/raw_frames.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::RawField;
using testing::RawFrame;
using testing::RawInteger;

Nonce NonceOf(uint8_t fill) {
  Nonce n{};
  n.fill(fill);
  return n;
}

TEST(FrameMac, InputCutsTheMacFieldWhereverItStands) {
  const std::string mac(kMacBytes, 'q');
  const std::string unknown = RawField(70, "later");
  const std::string frame = RawFrame(kProtocolVersion, 1,
                                     RawField(1, RawInteger(1)) + RawField(kTagFrameMac, mac) +
                                         unknown + RawField(8, "host"));
  Result<std::string> covered = FrameMacInput(frame);
  KDIST_ASSERT_OK(covered);
  EXPECT_EQ(*covered,
            RawFrame(kProtocolVersion, 1, RawField(1, RawInteger(1)) + unknown + RawField(8, "host")));
}

TEST(FrameMac, AFrameWithoutAMacIsItsOwnInput) {
  const std::string frame = RawFrame(kProtocolVersion, 1, RawField(8, "host"));
  Result<std::string> covered = FrameMacInput(frame);
  KDIST_ASSERT_OK(covered);
  EXPECT_EQ(*covered, frame);
}

TEST(FrameMac, MalformedFramesAreErrors) {
  const std::string frame = RawFrame(kProtocolVersion, 1, RawField(8, "host"));
  KDIST_EXPECT_ERROR(FrameMacInput(frame + "x"), StatusCode::kInvalidArgument, "header announces");
  KDIST_EXPECT_ERROR(FrameMacInput(RawFrame(kProtocolVersion, 1, "\x0a\x00")),
                     StatusCode::kInvalidArgument, "cut off");
}

TEST(FrameMac, DependsOnTokenNonceAndInput) {
  const std::string mac = FrameMac("s3cret", NonceOf(1), "frame");
  EXPECT_EQ(mac.size(), kMacBytes);
  EXPECT_EQ(mac, FrameMac("s3cret", NonceOf(1), "frame"));
  EXPECT_NE(mac, FrameMac("other", NonceOf(1), "frame"));
  EXPECT_NE(mac, FrameMac("s3cret", NonceOf(2), "frame"));
  EXPECT_NE(mac, FrameMac("s3cret", NonceOf(1), "framf"));
}

}  // namespace
}  // namespace kdist
