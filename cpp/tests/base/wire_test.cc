#include "base/wire.h"

#include <string>
#include <vector>

#include "testing/raw_frames.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::RawField;
using testing::RawFrame;

// Collects what ReadFields hands over.
struct Collected {
  std::vector<uint8_t> tags;
  std::vector<std::string> values;
};

Result<TagSet> Collect(std::string_view payload, const TagSet& known, Collected& out) {
  return ReadFields(payload, known, [&](const Field& f) {
    out.tags.push_back(f.tag);
    out.values.emplace_back(f.value);
    return Status::Ok();
  });
}

TEST(Wire, FramesAreByteExact) {
  FieldWriter w;
  w.Integer(1, -2);
  w.String(8, "ab", 255);
  const std::string expected =
      std::string("KDRV") + std::string("\x00\x04", 2) + std::string("\x00\x05", 2) +
      std::string("\x00\x00\x00\x10", 4) +                                // 16 payload bytes
      std::string("\x01\x00\x08\xff\xff\xff\xff\xff\xff\xff\xfe", 11) +  // tag 1: -2
      std::string("\x08\x00\x02", 3) + "ab";                               // tag 8: "ab"
  EXPECT_EQ(w.Frame(5), expected);
  EXPECT_EQ(kProtocolVersion, uint16_t{4});
}

TEST(Wire, OverlongStringsAreCutToTheirLimit) {
  FieldWriter w;
  w.String(3, std::string(10, 'x'), 4);
  const std::string frame = w.Frame(7);
  Result<std::string_view> payload = FramePayload(frame, 7, "test");
  KDIST_ASSERT_OK(payload);
  EXPECT_EQ(std::string(*payload), RawField(3, "xxxx"));
}

TEST(Wire, HeaderDecodesAndReportsAnyVersion) {
  Result<FrameHeader> header = DecodeFrameHeader(RawFrame(7, 3, "abc"));
  KDIST_ASSERT_OK(header);
  EXPECT_EQ(header->version, uint16_t{7});
  EXPECT_EQ(header->type, uint16_t{3});
  EXPECT_EQ(header->payload_size, uint32_t{3});
  EXPECT_EQ(header->frame_size(), kFrameHeaderSize + 3);
}

TEST(Wire, BadHeadersAreErrors) {
  KDIST_EXPECT_ERROR(DecodeFrameHeader("KDR"), StatusCode::kInvalidArgument,
                     "only 3 bytes of a 12-byte frame header");
  KDIST_EXPECT_ERROR(DecodeFrameHeader("GET / HTTP/1.1\r\n"), StatusCode::kInvalidArgument,
                     "\"GET / HTTP/1\"");
  KDIST_EXPECT_ERROR(DecodeFrameHeader(RawFrame(2, 1, "", kMaxFramePayload + 1)),
                     StatusCode::kInvalidArgument, "over the limit");
}

TEST(Wire, FramePayloadChecksVersionSizeAndType) {
  KDIST_EXPECT_ERROR(FramePayload(RawFrame(9, 1, ""), 1, "test"), StatusCode::kFailedPrecondition,
                     "it speaks kdist test protocol version 9, this process speaks version 4");
  KDIST_EXPECT_ERROR(FramePayload(RawFrame(kProtocolVersion, 1, "ab") + "x", 1, "test"),
                     StatusCode::kInvalidArgument,
                     "the frame is 15 bytes but its header announces 14");
  KDIST_EXPECT_ERROR(FramePayload(RawFrame(kProtocolVersion, 1, "ab").substr(0, 13), 1, "test"),
                     StatusCode::kInvalidArgument, "header announces");
  KDIST_EXPECT_ERROR(FramePayload(RawFrame(kProtocolVersion, 2, ""), 1, "test"),
                     StatusCode::kInvalidArgument,
                     "expected test frame type 1, received frame type 2");
  const std::string frame = RawFrame(kProtocolVersion, 1, "ab");
  Result<std::string_view> payload = FramePayload(frame, 1, "test");  // a view into `frame`
  KDIST_ASSERT_OK(payload);
  EXPECT_EQ(*payload, std::string_view("ab"));
}

TEST(Wire, KnownFieldsAreReadInOrderAndOthersSkipped) {
  const std::string payload = RawField(200, "future") + RawField(1, "a") + RawField(63, "x") +
                              RawField(2, "bb") + RawField(3, "skipped");
  Collected got;
  Result<TagSet> seen = Collect(payload, TagSet{1, 2}, got);
  KDIST_ASSERT_OK(seen);
  EXPECT_EQ(got.tags, (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(got.values, (std::vector<std::string>{"a", "bb"}));
  EXPECT_TRUE(seen->Has(1));
  EXPECT_TRUE(seen->Has(2));
  EXPECT_FALSE(seen->Has(3));
}

TEST(Wire, TagsOf64AndAboveAreNeverKnown) {
  // 65 is 64 + 1: skipped, not read as tag 1 (nor counted as a second tag 1).
  const TagSet known{1, 65, 255};
  EXPECT_TRUE(known.Has(1));
  EXPECT_FALSE(known.Has(65));
  EXPECT_FALSE(known.Has(64));
  EXPECT_FALSE(known.Has(255));
  Collected got;
  KDIST_ASSERT_OK(Collect(RawField(1, "a") + RawField(65, "b") + RawField(129, "c"), known, got));
  EXPECT_EQ(got.values, (std::vector<std::string>{"a"}));
}

TEST(Wire, MalformedFieldsAreErrors) {
  Collected got;
  KDIST_EXPECT_ERROR(Collect(RawField(1, "a") + RawField(1, "b"), TagSet{1}, got),
                     StatusCode::kInvalidArgument, "field 1 appears twice");
  // An unknown tag may repeat: it is not read.
  KDIST_EXPECT_OK(Collect(RawField(9, "a") + RawField(9, "b"), TagSet{1}, got));
  KDIST_EXPECT_ERROR(Collect(RawField(1, "a") + std::string("\x02\x00", 2), TagSet{1}, got),
                     StatusCode::kInvalidArgument, "a field header is cut off after 2 bytes");
  std::string lying = RawField(2, "ab");
  lying[1] = 0x10;  // claims 4096+ bytes
  KDIST_EXPECT_ERROR(Collect(lying, TagSet{}, got), StatusCode::kInvalidArgument,
                     "field 2 claims 4098 bytes but only 2 remain");
  const Status stop = InvalidArgument("stop here");
  KDIST_EXPECT_ERROR(ReadFields(RawField(1, "a"), TagSet{1}, [&](const Field&) { return stop; }),
                     StatusCode::kInvalidArgument, "stop here");
}

TEST(Wire, IntegersAndStringsAreCheckedAgainstTheirSizes) {
  int64_t n = 0;
  KDIST_EXPECT_OK(ReadInteger(Field{1, std::string_view("\x80\0\0\0\0\0\0\x01", 8)}, "n", n));
  EXPECT_EQ(n, INT64_MIN + 1);
  KDIST_EXPECT_ERROR(ReadInteger(Field{1, "abc"}, "count", n), StatusCode::kInvalidArgument,
                     "field count is 3 bytes; expected 8");
  std::string s;
  KDIST_EXPECT_OK(ReadString(Field{2, "host"}, 4, "host", s));
  EXPECT_EQ(s, std::string("host"));
  KDIST_EXPECT_ERROR(ReadString(Field{2, "hosts"}, 4, "host", s), StatusCode::kInvalidArgument,
                     "field host is 5 bytes, over its limit of 4");
}

TEST(FrameAssembler, CutsAStreamFedByteByByte) {
  FieldWriter first, second;
  first.String(1, "one", 16);
  second.Integer(2, 42);
  const std::string a = first.Frame(1);
  const std::string b = second.Frame(2);
  FrameAssembler assembler;
  std::string frames;
  int taken = 0;
  for (char c : a + b) {
    KDIST_ASSERT_OK(assembler.Append(std::string_view(&c, 1)));
    const std::string frame = assembler.TakeFrame();
    if (!frame.empty()) {
      frames += frame;
      ++taken;
    }
  }
  EXPECT_EQ(taken, 2);
  EXPECT_EQ(frames, a + b);
  EXPECT_EQ(assembler.buffered(), size_t{0});
}

TEST(FrameAssembler, RefusesHttpAtTheFirstByte) {
  FrameAssembler assembler;
  KDIST_EXPECT_ERROR(assembler.Append("G"), StatusCode::kInvalidArgument, "magic");
  FrameAssembler oversized;
  KDIST_EXPECT_OK(oversized.Append("KDRV"));
  KDIST_EXPECT_ERROR(oversized.Append(RawFrame(kProtocolVersion, 1, "", 1 << 30).substr(4)),
                     StatusCode::kInvalidArgument, "over the limit");
  EXPECT_TRUE(CouldStartFrame(""));
  EXPECT_TRUE(CouldStartFrame("KD"));
  EXPECT_FALSE(CouldStartFrame("KX"));
}

}  // namespace
}  // namespace kdist
