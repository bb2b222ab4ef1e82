#include "base/challenge.h"

#include <gtest/gtest.h>

#include "base/wire.h"
#include "testing/raw_frames.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::RawField;
using testing::RawFrame;

Nonce NonceOf(uint8_t fill) {
  Nonce n{};
  n.fill(fill);
  return n;
}

std::string Bytes(const Nonce& nonce) {
  return std::string(reinterpret_cast<const char*>(nonce.data()), nonce.size());
}

TEST(Challenge, NamesTheChannelWhenTheFrameIsAnotherType) {
  KDIST_EXPECT_ERROR(DecodeChallenge(RawFrame(kProtocolVersion, 1, ""), "nodes' rendezvous"),
                     StatusCode::kInvalidArgument,
                     "expected nodes' rendezvous frame type 5, received frame type 1");
}

TEST(Challenge, RoundTrips) {
  const Nonce nonce = NonceOf(0xf0);
  const std::string frame = EncodeChallenge(Challenge{nonce});
  EXPECT_EQ(frame, RawFrame(kProtocolVersion, 5, RawField(16, Bytes(nonce))));
  Result<Challenge> out = DecodeChallenge(frame, "roll call");
  KDIST_ASSERT_OK(out);
  EXPECT_TRUE(out->nonce == nonce);
}

TEST(Challenge, BadChallengesAreErrors) {
  const std::string nonce = Bytes(NonceOf(1));
  KDIST_EXPECT_ERROR(DecodeChallenge(RawFrame(kProtocolVersion, 5, ""), "roll call"),
                     StatusCode::kInvalidArgument, "the challenge has no nonce field");
  KDIST_EXPECT_ERROR(DecodeChallenge(RawFrame(kProtocolVersion, 5, RawField(16, nonce.substr(1))), "roll call"),
                     StatusCode::kInvalidArgument, "field nonce is 15 bytes; expected 16");
  KDIST_EXPECT_ERROR(
      DecodeChallenge(RawFrame(kProtocolVersion, 5, RawField(16, nonce) + RawField(16, nonce)), "roll call"),
      StatusCode::kInvalidArgument, "appears twice");
  KDIST_EXPECT_ERROR(DecodeChallenge(RawFrame(9, 5, RawField(16, nonce)), "roll call"),
                     StatusCode::kFailedPrecondition, "install the same kdist version");
  KDIST_EXPECT_ERROR(DecodeChallenge(RawFrame(kProtocolVersion, 5, RawField(16, nonce) + "x"), "roll call"),
                     StatusCode::kInvalidArgument, "cut off");
  // Unknown tags are skipped, as in every frame.
  KDIST_EXPECT_OK(DecodeChallenge(RawFrame(kProtocolVersion, 5, RawField(70, "later") + RawField(16, nonce)), "roll call"));
}

TEST(Opening, IsAnEmptyFrameOfThisVersion) {
  EXPECT_EQ(EncodeOpening(), RawFrame(kProtocolVersion, 6, ""));
  EXPECT_TRUE(IsOpening(EncodeOpening()));
  EXPECT_TRUE(IsOpening(RawFrame(kProtocolVersion, 6, RawField(70, "later"))));
  EXPECT_FALSE(IsOpening(RawFrame(2, 6, "")));  // another version: answered as such
  EXPECT_FALSE(IsOpening(RawFrame(kProtocolVersion, 1, "")));
  EXPECT_FALSE(IsOpening(EncodeOpening() + "x"));
  EXPECT_FALSE(IsOpening("KDRV"));
}

}  // namespace
}  // namespace kdist
