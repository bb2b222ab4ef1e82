#include "roll_call/roll_call_wire.h"

#include "base/backoff.h"  // SplitMix64 for random bytes
#include "base/hmac_sha256.h"
#include "testing/raw_frames.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

Hello SampleHello() {
  Hello h;
  h.process_id = 3;
  h.num_processes = 4;
  h.fingerprint = "0123456789abcdef";
  h.coordinator = "127.0.0.1:5000";
  h.num_processes_source = "KERAS_DISTRIBUTION_NUM_PROCESSES";
  h.coordinator_source = "argument";
  h.jax_version = "0.4.35";
  h.host = "node-3";
  h.pid = 4242;
  h.token = "s3cret";  // never encoded
  h.mac = std::string(kMacBytes, 'M');
  return h;
}

using testing::RawField;
using testing::RawInteger;
using testing::RawFrame;

// The payload of a minimal valid hello, built by hand.
std::string MinimalHelloPayload() {
  return RawField(1, RawInteger(1)) + RawField(2, RawInteger(2)) + RawField(3, "fp") + RawField(4, "h:1") +
         RawField(8, "host") + RawField(9, RawInteger(77));
}

TEST(Hello, RoundTrips) {
  const Hello in = SampleHello();
  const std::string frame = EncodeHello(in);
  EXPECT_EQ(frame.substr(0, 4), std::string("KDRV"));
  Result<Hello> out = DecodeHello(frame);
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->process_id, in.process_id);
  EXPECT_EQ(out->num_processes, in.num_processes);
  EXPECT_EQ(out->fingerprint, in.fingerprint);
  EXPECT_EQ(out->coordinator, in.coordinator);
  EXPECT_EQ(out->num_processes_source, in.num_processes_source);
  EXPECT_EQ(out->coordinator_source, in.coordinator_source);
  EXPECT_EQ(out->jax_version, in.jax_version);
  EXPECT_EQ(out->host, in.host);
  EXPECT_EQ(out->pid, in.pid);
  EXPECT_EQ(out->mac, in.mac);
  EXPECT_EQ(out->token, std::string());
  EXPECT_EQ(frame.find(in.token), std::string::npos);
}

TEST(Hello, EncodesTheTagsTheWireFixes) {
  // Every field's tag and the frame type, by number, in the order written:
  // the bytes a process of another build of this protocol version reads.
  Hello in = SampleHello();
  in.environment = "env";
  EXPECT_EQ(EncodeHello(in),
            RawFrame(kProtocolVersion, 1,
                     RawField(1, RawInteger(3)) + RawField(2, RawInteger(4)) + RawField(3, in.fingerprint) +
                         RawField(4, in.coordinator) + RawField(5, in.num_processes_source) +
                         RawField(6, in.coordinator_source) + RawField(7, in.jax_version) +
                         RawField(8, in.host) + RawField(9, RawInteger(4242)) + RawField(17, "env") +
                         RawField(10, in.mac)));
}

TEST(Hello, NegativeAndExtremeIntegersRoundTrip) {
  Hello in = SampleHello();
  in.process_id = -1;
  in.num_processes = INT64_MAX;
  in.pid = INT64_MIN;
  in.mac.clear();
  Result<Hello> out = DecodeHello(EncodeHello(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->process_id, int64_t{-1});
  EXPECT_EQ(out->num_processes, INT64_MAX);
  EXPECT_EQ(out->pid, INT64_MIN);
  EXPECT_EQ(out->mac, std::string());
}

TEST(Hello, OverlongStringsAreCutSoTheFrameStillDecodes) {
  Hello in = SampleHello();
  in.host = std::string(10000, 'h');
  in.mac = std::string(5000, 'm');
  const std::string frame = EncodeHello(in);
  EXPECT_LE(frame.size(), kFrameHeaderSize + kMaxFramePayload);
  Result<Hello> out = DecodeHello(frame);
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->host.size(), kMaxHostBytes);
  EXPECT_EQ(out->mac.size(), kMacBytes);
}

TEST(Hello, EveryTruncationIsAnErrorNotACrash) {
  const std::string frame = EncodeHello(SampleHello());
  for (size_t n = 0; n < frame.size(); ++n) {
    Result<Hello> out = DecodeHello(std::string_view(frame).substr(0, n));
    EXPECT_FALSE(out.ok());
    if (out.ok()) return;
    EXPECT_TRUE(out.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST(Hello, TrailingBytesAreRejected) {
  KDIST_EXPECT_ERROR(DecodeHello(EncodeHello(SampleHello()) + "x"), StatusCode::kInvalidArgument,
                     "header announces");
}

TEST(Hello, WrongMagicIsNamedWithTheBytesQuoted) {
  KDIST_EXPECT_ERROR(DecodeHello("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
                     StatusCode::kInvalidArgument, "\"GET / HTTP/1\"");
}

TEST(Hello, OversizedPayloadIsRefusedFromTheHeaderAlone) {
  const std::string header = RawFrame(kProtocolVersion, 1, "", kMaxFramePayload + 1);
  KDIST_EXPECT_ERROR(DecodeFrameHeader(header), StatusCode::kInvalidArgument, "over the limit");
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 1, "", 0xffffffffll)), StatusCode::kInvalidArgument,
                     "4294967295");
}

TEST(Hello, OtherProtocolVersionIsAFailedPrecondition) {
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(9, 1, MinimalHelloPayload())),
                     StatusCode::kFailedPrecondition, "protocol version 9");
  Result<FrameHeader> header = DecodeFrameHeader(RawFrame(7, 1, ""));
  KDIST_ASSERT_OK(header);
  EXPECT_EQ(header->version, uint16_t{7});
}

TEST(Hello, MinimalHandMadeHelloDecodes) {
  Result<Hello> out = DecodeHello(RawFrame(kProtocolVersion, 1, MinimalHelloPayload()));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->pid, int64_t{77});
  EXPECT_EQ(out->jax_version, std::string());
  EXPECT_EQ(out->token, std::string());
}

TEST(Hello, UnknownFieldsAreSkipped) {
  const std::string payload = RawField(200, "future") + MinimalHelloPayload() + RawField(63, "x");
  KDIST_EXPECT_OK(DecodeHello(RawFrame(kProtocolVersion, 1, payload)));
}

TEST(Hello, MalformedFieldsAreErrors) {
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 1, MinimalHelloPayload() + RawField(9, RawInteger(1)))),
                     StatusCode::kInvalidArgument, "appears twice");
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 1, RawField(1, "abc") + MinimalHelloPayload())),
                     StatusCode::kInvalidArgument, "expected 8");
  KDIST_EXPECT_ERROR(
      DecodeHello(RawFrame(kProtocolVersion, 1, RawField(8, std::string(300, 'h')) + RawField(1, RawInteger(1)))),
      StatusCode::kInvalidArgument, "over its limit");
  // A single over-limit host in an otherwise complete hello: named, with both sizes.
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 1, RawField(1, RawInteger(1)) + RawField(2, RawInteger(2)) +
                                                    RawField(3, "fp") + RawField(4, "h:1") +
                                                    RawField(8, std::string(300, 'h')) +
                                                    RawField(9, RawInteger(77)))),
                     StatusCode::kInvalidArgument, "field host is 300 bytes, over its limit of 255");
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 1, RawField(1, RawInteger(1)))), StatusCode::kInvalidArgument,
                     "no num_processes");
  std::string cut = MinimalHelloPayload() + "\x03\x00";
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 1, cut)), StatusCode::kInvalidArgument, "cut off");
  std::string lying = MinimalHelloPayload() + RawField(3, "ab");
  lying[lying.size() - 3] = 0x10;  // the last field claims 4096+ bytes
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 1, lying)), StatusCode::kInvalidArgument, "remain");
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 2, MinimalHelloPayload())),
                     StatusCode::kInvalidArgument, "frame type 2");
}

TEST(Hello, RandomBytesNeverCrashAndAlmostNeverDecode) {
  SplitMix64 random(2024);
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    const size_t size = random.Next() % 96;
    std::string bytes;
    for (size_t j = 0; j < size; ++j) bytes += static_cast<char>(random.Next() & 0xff);
    if (i % 2 == 0 && bytes.size() >= kFrameHeaderSize) {  // half with a plausible header
      bytes.replace(0, kFrameHeaderSize, RawFrame(kProtocolVersion, 1 + (i % 4), "", size - kFrameHeaderSize));
    }
    if (DecodeHello(bytes).ok()) ++decoded;
    (void)DecodeReply(bytes);
    FrameAssembler assembler;
    if (assembler.Append(bytes).ok()) (void)assembler.TakeFrame();
  }
  EXPECT_EQ(decoded, 0);
}

TEST(Reply, GoRejectAndStatusRoundTrip) {
  for (FrameType type : {FrameType::kGo, FrameType::kReject, FrameType::kStatus}) {
    Reply in;
    in.type = type;
    in.code = type == FrameType::kReject ? StatusCode::kDeadlineExceeded : StatusCode::kOk;
    in.message = "1 of 2 processes joined";
    in.host = "node-0";
    in.pid = 99;
    in.jax_version = "0.4.35";
    in.shared.seed = 4294967295;
    Result<Reply> out = DecodeReply(EncodeReply(in));
    KDIST_ASSERT_OK(out);
    EXPECT_TRUE(out->type == type);
    EXPECT_TRUE(out->code == in.code);
    EXPECT_EQ(out->message, in.message);
    EXPECT_EQ(out->host, in.host);
    EXPECT_EQ(out->pid, int64_t{99});
    EXPECT_EQ(out->jax_version, in.jax_version);
    // Only "go" carries what the job shares.
    EXPECT_EQ(out->shared.seed, type == FrameType::kGo ? int64_t{4294967295} : int64_t{0});
  }
}

TEST(Reply, EncodesTheTagsTheWireFixes) {
  Reply go;
  go.type = FrameType::kGo;
  go.message = "m";
  go.host = "node-0";
  go.pid = 7;
  go.jax_version = "0.5.1";
  go.shared.seed = 42;
  go.shared.liveness_port = 6000;
  go.shared.liveness_nonce = "ln";
  go.shared.consistency_notes = "notes";
  EXPECT_EQ(EncodeReply(go),
            RawFrame(kProtocolVersion, 2,
                     RawField(11, RawInteger(0)) + RawField(12, "m") + RawField(8, "node-0") +
                         RawField(9, RawInteger(7)) + RawField(7, "0.5.1") + RawField(13, RawInteger(42)) +
                         RawField(14, RawInteger(6000)) + RawField(15, "ln") + RawField(18, "notes")));
  Reply reject;
  reject.type = FrameType::kReject;
  reject.code = StatusCode::kDeadlineExceeded;
  reject.message = "late";
  EXPECT_EQ(EncodeReply(reject),
            RawFrame(kProtocolVersion, 3,
                     RawField(11, RawInteger(static_cast<int64_t>(StatusCode::kDeadlineExceeded))) +
                         RawField(12, "late") + RawField(8, "") + RawField(9, RawInteger(0)) +
                         RawField(7, "")));
  Reply status;
  status.type = FrameType::kStatus;
  EXPECT_EQ(EncodeReply(status).substr(6, 2), std::string("\0\4", 2));
}

TEST(Reply, GoWithoutSeedIsAnError) {
  KDIST_EXPECT_ERROR(DecodeReply(RawFrame(kProtocolVersion, 2, RawField(11, RawInteger(0)))),
                     StatusCode::kInvalidArgument, "go reply carries no seed");
  KDIST_EXPECT_OK(
      DecodeReply(RawFrame(kProtocolVersion, 2, RawField(11, RawInteger(0)) + RawField(13, RawInteger(7)))));
  KDIST_EXPECT_ERROR(DecodeReply(RawFrame(kProtocolVersion, 2,
                                          RawField(11, RawInteger(0)) + RawField(13, RawInteger(7)) + RawField(13, RawInteger(8)))),
                     StatusCode::kInvalidArgument, "appears twice");
}

TEST(Reply, GoCarriesTheLivenessChannel) {
  Reply in;
  in.type = FrameType::kGo;
  in.shared.seed = 1;
  in.shared.liveness_port = 40001;
  in.shared.liveness_nonce = "0123abcd";
  Result<Reply> out = DecodeReply(EncodeReply(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->shared.liveness_port, int64_t{40001});
  EXPECT_EQ(out->shared.liveness_nonce, std::string("0123abcd"));
  in.shared.liveness_port = 0;  // no channel: neither field is sent
  Result<Reply> none = DecodeReply(EncodeReply(in));
  KDIST_ASSERT_OK(none);
  EXPECT_EQ(none->shared.liveness_port, int64_t{0});
  EXPECT_EQ(none->shared.liveness_nonce, std::string(""));
  KDIST_EXPECT_ERROR(DecodeReply(RawFrame(kProtocolVersion, 2,
                                          RawField(11, RawInteger(0)) + RawField(13, RawInteger(7)) +
                                              RawField(14, RawInteger(70000)))),
                     StatusCode::kInvalidArgument, "liveness port 70000 is outside 1-65535");
}

TEST(Reply, BadRepliesAreErrors) {
  KDIST_EXPECT_ERROR(DecodeReply(EncodeHello(SampleHello())), StatusCode::kInvalidArgument,
                     "not a reply");
  KDIST_EXPECT_ERROR(DecodeReply(RawFrame(kProtocolVersion, 3, RawField(11, RawInteger(0)))), StatusCode::kInvalidArgument,
                     "no failure code");
  KDIST_EXPECT_ERROR(DecodeReply(RawFrame(kProtocolVersion, 3, RawField(11, RawInteger(99)))),
                     StatusCode::kInvalidArgument, "not a known code");
  KDIST_EXPECT_ERROR(DecodeReply("KDR"), StatusCode::kInvalidArgument,
                     "only 3 bytes of a 12-byte frame header");
  KDIST_EXPECT_ERROR(DecodeHello("KDR"), StatusCode::kInvalidArgument,
                     "only 3 bytes of a 12-byte frame header");
  Reply long_message;
  long_message.type = FrameType::kReject;
  long_message.code = StatusCode::kFailedPrecondition;
  long_message.message = std::string(20000, 'm');
  Result<Reply> out = DecodeReply(EncodeReply(long_message));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->message.size(), kMaxMessageBytes);
}

Nonce TestNonce(uint8_t first) {
  Nonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(first + i);
  return nonce;
}

std::string Bytes(const Nonce& nonce) {
  return std::string(reinterpret_cast<const char*>(nonce.data()), nonce.size());
}

TEST(Challenge, IsNoneOfTheRollCallsOtherFrames) {
  const std::string challenge = EncodeChallenge(Challenge{TestNonce(1)});
  KDIST_EXPECT_ERROR(DecodeChallenge(EncodeHello(SampleHello()), "roll call"),
                     StatusCode::kInvalidArgument,
                     "expected roll call frame type 5, received frame type 1");
  KDIST_EXPECT_ERROR(DecodeReply(challenge), StatusCode::kInvalidArgument, "not a reply");
  KDIST_EXPECT_ERROR(DecodeHello(challenge), StatusCode::kInvalidArgument, "received frame type 5");
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(2, 6, "")), StatusCode::kFailedPrecondition,
                     "install the same kdist version");
}

TEST(Hello, SignedHelloCarriesTheMacOverTheNonceAndTheFrameWithoutIt) {
  Hello hello = SampleHello();
  hello.mac.clear();
  const Nonce nonce = TestNonce(7);
  const std::string frame = EncodeSignedHello(hello, nonce);
  Result<Hello> out = DecodeHello(frame);
  KDIST_ASSERT_OK(out);
  ASSERT_EQ(out->mac.size(), kMacBytes);
  // The documented bytes: the frame without its 35-byte MAC field (the last),
  // its header's length lowered to match: the frame of the hello without a MAC.
  const std::string bare = EncodeHello(hello);
  ASSERT_EQ(frame.size(), bare.size() + 3 + kMacBytes);
  EXPECT_EQ(frame.substr(kFrameHeaderSize, bare.size() - kFrameHeaderSize),
            bare.substr(kFrameHeaderSize));
  EXPECT_EQ(frame.substr(bare.size()), RawField(10, out->mac));
  Result<std::string> covered = FrameMacInput(frame);
  KDIST_ASSERT_OK(covered);
  EXPECT_EQ(*covered, bare);
  // Computed independently: HMAC-SHA-256(token, nonce || those bytes).
  EXPECT_EQ(out->mac, std::string(DigestBytes(ComputeHmacSha256("s3cret", Bytes(nonce) + bare))));
  EXPECT_EQ(FrameMac("s3cret", nonce, bare), out->mac);
  // The token is in no byte of it.
  EXPECT_EQ(frame.find("s3cret"), std::string::npos);
  // Another nonce, another MAC; another token, another MAC.
  Result<Hello> other_nonce = DecodeHello(EncodeSignedHello(hello, TestNonce(8)));
  KDIST_ASSERT_OK(other_nonce);
  EXPECT_NE(other_nonce->mac, out->mac);
  hello.token = "s3cres";
  Result<Hello> other_token = DecodeHello(EncodeSignedHello(hello, nonce));
  KDIST_ASSERT_OK(other_token);
  EXPECT_NE(other_token->mac, out->mac);
}

TEST(Hello, WithoutATokenTheHelloHasNoMacField) {
  Hello hello = SampleHello();
  hello.token.clear();  // any MAC given is replaced: here by none
  const std::string frame = EncodeSignedHello(hello, TestNonce(7));
  hello.mac.clear();
  EXPECT_EQ(frame, EncodeHello(hello));
  Result<Hello> out = DecodeHello(frame);
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->mac, std::string());
  Result<std::string> covered = FrameMacInput(frame);
  KDIST_ASSERT_OK(covered);
  EXPECT_EQ(*covered, frame);
}

TEST(Hello, MacInputCutsTheMacFieldWhereverItStands) {
  const std::string mac(kMacBytes, 'q');
  const std::string unknown = RawField(70, "later");
  const std::string frame =
      RawFrame(kProtocolVersion, 1, RawField(1, RawInteger(1)) + RawField(10, mac) + unknown +
                                        RawField(2, RawInteger(2)) + RawField(3, "fp") + RawField(4, "h:1") +
                                        RawField(8, "host") + RawField(9, RawInteger(77)));
  KDIST_ASSERT_OK(DecodeHello(frame));
  Result<std::string> covered = FrameMacInput(frame);
  KDIST_ASSERT_OK(covered);
  EXPECT_EQ(*covered, RawFrame(kProtocolVersion, 1,
                               RawField(1, RawInteger(1)) + unknown + RawField(2, RawInteger(2)) + RawField(3, "fp") +
                                   RawField(4, "h:1") + RawField(8, "host") + RawField(9, RawInteger(77))));
  KDIST_EXPECT_ERROR(FrameMacInput(frame + "x"), StatusCode::kInvalidArgument, "header announces");
  KDIST_EXPECT_ERROR(FrameMacInput(RawFrame(kProtocolVersion, 1, "\x0a\x00")),
                     StatusCode::kInvalidArgument, "cut off");
}

TEST(Hello, MacFieldMustBeExactlyADigest) {
  KDIST_EXPECT_ERROR(
      DecodeHello(RawFrame(kProtocolVersion, 1, MinimalHelloPayload() + RawField(10, "s3cret"))),
      StatusCode::kInvalidArgument, "field mac is 6 bytes; expected 32");
  const std::string mac = RawField(10, std::string(kMacBytes, 'q'));
  KDIST_EXPECT_ERROR(DecodeHello(RawFrame(kProtocolVersion, 1, MinimalHelloPayload() + mac + mac)),
                     StatusCode::kInvalidArgument, "appears twice");
}

TEST(Hello, VersionTwoHelloWithItsTokenInClearIsAnotherVersion) {
  EXPECT_EQ(kProtocolVersion, uint16_t{4});
  KDIST_EXPECT_ERROR(
      DecodeHello(RawFrame(2, 1, MinimalHelloPayload() + RawField(10, "s3cret"))),
      StatusCode::kFailedPrecondition,
      "protocol version 2, this process speaks version 4; install the same kdist version");
}

}  // namespace
}  // namespace kdist
