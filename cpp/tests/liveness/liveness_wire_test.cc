#include "liveness/liveness_wire.h"

#include <string>

#include "testing/liveness_helpers.h"
#include "testing/raw_frames.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::JoinOf;
using testing::RawField;
using testing::RawFrame;
using testing::RawInteger;
using testing::Self;

TEST(LivenessWire, JoinAndNoticeRoundTrip) {
  Result<LiveJoin> join = DecodeLiveJoin(EncodeLiveJoin(JoinOf(3, "abc")));
  KDIST_ASSERT_OK(join);
  EXPECT_EQ(join->process_id, int64_t{3});
  EXPECT_EQ(join->nonce, std::string("abc"));
  EXPECT_EQ(join->host, std::string("node-3"));
  EXPECT_EQ(join->pid, int64_t{4003});
  LiveNotice n{LiveKind::kAllDone, 2, "h", 7, "m", false};
  Result<LiveNotice> back = DecodeLiveNotice(EncodeLiveNotice(n));
  KDIST_ASSERT_OK(back);
  EXPECT_TRUE(back->kind == LiveKind::kAllDone);
  EXPECT_EQ(back->process_id, int64_t{2});
  EXPECT_EQ(back->message, std::string("m"));
  EXPECT_FALSE(back->barrier);
}

TEST(LivenessWire, AnUnreachableNoticeCarriesItsAddressAndSinceWhen) {
  LiveNotice n{LiveKind::kUnreachable, 2, "node-2", 977, "no answer", true};
  n.millis = 20000;
  n.address = "10.0.0.3";
  n.since_unix_millis = 1796328067000;
  Result<LiveNotice> back = DecodeLiveNotice(EncodeLiveNotice(n));
  KDIST_ASSERT_OK(back);
  EXPECT_TRUE(back->kind == LiveKind::kUnreachable);
  EXPECT_EQ(back->address, std::string("10.0.0.3"));
  EXPECT_EQ(back->since_unix_millis, int64_t{1796328067000});
  EXPECT_EQ(back->millis, int64_t{20000});
  EXPECT_EQ(std::string(LiveKindName(LiveKind::kUnreachable)), std::string("unreachable"));
}

TEST(LivenessWire, AStopRequestCarriesWhetherItsSenderIsArmed) {
  LiveNotice request = Self(LiveKind::kStopRequest, "time limit");
  request.process_id = 1;
  request.armed = true;
  Result<LiveNotice> back = DecodeLiveNotice(EncodeLiveNotice(request));
  KDIST_ASSERT_OK(back);
  EXPECT_TRUE(back->armed);
  request.armed = false;  // the default travels as no field at all
  back = DecodeLiveNotice(EncodeLiveNotice(request));
  KDIST_ASSERT_OK(back);
  EXPECT_FALSE(back->armed);
  LiveNotice armed = request;
  armed.armed = true;
  EXPECT_EQ(EncodeLiveNotice(armed).size(), EncodeLiveNotice(request).size() + 11);  // tag 26
}

TEST(LivenessWire, EncodersWriteTheTagsTheWireFixes) {
  // Every field's tag and the frame types, by number, in the order written:
  // the bytes a process of another build of this protocol version reads.
  EXPECT_EQ(EncodeLiveJoin(JoinOf(3, "abc")),
            RawFrame(kProtocolVersion, 5,
                     RawField(1, RawInteger(3)) + RawField(10, "abc") + RawField(8, "node-3") +
                         RawField(9, RawInteger(4003))));
  LiveNotice n{LiveKind::kDied, 2, "h", 7, "m", false};
  EXPECT_EQ(EncodeLiveNotice(n),
            RawFrame(kProtocolVersion, 6,
                     RawField(16, RawInteger(2)) + RawField(1, RawInteger(2)) +
                         RawField(8, "h") + RawField(9, RawInteger(7)) + RawField(12, "m") +
                         RawField(17, RawInteger(0))));
}

TEST(LivenessWire, TagsAbove63AreUnknownNotAliasesOfKnownOnes) {
  // Tag 81 is 64 + 17 (the barrier's tag): skipped as unknown, not read as a barrier
  // (found by fuzz/liveness: the shift past 63 was undefined behaviour).
  LiveNotice failed = Self(LiveKind::kFailed);
  failed.barrier = false;
  const std::string frame = EncodeLiveNotice(failed);
  std::string payload = frame.substr(kFrameHeaderSize) + std::string("\x51\x00\x08", 3) +
                        std::string(7, '\0') + std::string(1, '\1');
  std::string header = frame.substr(0, kFrameHeaderSize);
  const size_t size = payload.size();
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<char>((size >> (8 * (3 - i))) & 0xff);
  Result<LiveNotice> notice = DecodeLiveNotice(header + payload);
  KDIST_ASSERT_OK(notice);
  EXPECT_FALSE(notice->barrier);
  EXPECT_TRUE(notice->kind == LiveKind::kFailed);
}

TEST(LivenessWire, DecodersRefuseOtherFramesAndGarbage) {
  KDIST_EXPECT_ERROR(DecodeLiveNotice(EncodeLiveJoin(JoinOf(1))), StatusCode::kInvalidArgument,
                     "expected liveness frame type 6");
  KDIST_EXPECT_ERROR(DecodeLiveJoin(EncodeLiveNotice(Self(LiveKind::kFailed))),
                     StatusCode::kInvalidArgument, "type 5");
  std::string cut = EncodeLiveJoin(JoinOf(1));
  cut.pop_back();
  EXPECT_TRUE(!DecodeLiveJoin(cut).ok());
  EXPECT_TRUE(!DecodeLiveNotice("KDRV").ok());
  LiveNotice bad = Self(LiveKind::kFailed);
  std::string frame = EncodeLiveNotice(bad);
  frame[kFrameHeaderSize + 3 + 7] = 99;  // the kind's low byte
  KDIST_EXPECT_ERROR(DecodeLiveNotice(frame), StatusCode::kInvalidArgument, "unknown kind 99");
}

}  // namespace
}  // namespace kdist
