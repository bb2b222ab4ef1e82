#include "rendezvous/rendezvous_wire.h"

#include <gtest/gtest.h>

#include "base/backoff.h"  // SplitMix64 for random bytes
#include "testing/raw_frames.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

Nonce NonceOf(uint8_t fill) {
  Nonce n{};
  n.fill(fill);
  return n;
}

NodeHello SampleHello() {
  NodeHello h;
  h.job_id = "train-7";
  h.node_name = "node-b";
  h.host = "box-b";
  h.pid = 4242;
  h.processes_per_node = 2;
  h.min_nodes = 2;
  h.max_nodes = 3;
  h.coordinator_port = 41000;
  h.environment = "env-bytes";
  h.nonce = NonceOf(7);
  return h;
}

NodeReply SampleRoster() {
  NodeReply r;
  r.sequence = 3;
  r.kind = NodeReplyKind::kRoster;
  r.attempt = 1;
  r.node_rank = 1;
  r.processes_per_node = 2;
  r.coordinator_host = "10.0.0.1";
  r.coordinator_port = 41000;
  r.node_count = 2;
  r.first_failure = "process 3 (node node-b, host box-b): ValueError: boom";
  r.message = "python: 3.13.1 on node node-a; 3.12.0 on node node-b";
  return r;
}

TEST(NodeHello, RoundTrips) {
  const NodeHello in = SampleHello();
  Result<NodeHello> out = DecodeNodeHello(EncodeNodeHello(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->job_id, "train-7");
  EXPECT_EQ(out->node_name, "node-b");
  EXPECT_EQ(out->host, "box-b");
  EXPECT_EQ(out->pid, 4242);
  EXPECT_EQ(out->processes_per_node, 2);
  EXPECT_EQ(out->min_nodes, 2);
  EXPECT_EQ(out->max_nodes, 3);
  EXPECT_EQ(out->coordinator_port, 41000);
  EXPECT_EQ(out->environment, "env-bytes");
  EXPECT_EQ(out->nonce, NonceOf(7));
  EXPECT_TRUE(out->mac.empty());
}

TEST(NodeHello, SignedVerifiesOnlyUnderTheSameTokenAndNonce) {
  const std::string frame = EncodeSignedNodeHello(SampleHello(), "s3cret", NonceOf(1));
  Result<NodeHello> hello = DecodeNodeHello(frame);
  KDIST_ASSERT_OK(hello);
  ASSERT_EQ(hello->mac.size(), kMacBytes);
  EXPECT_EQ(frame.find("s3cret"), std::string::npos);  // the token never travels
  EXPECT_TRUE(NodeFrameVerifies(frame, hello->mac, "s3cret", NonceOf(1)));
  EXPECT_FALSE(NodeFrameVerifies(frame, hello->mac, "other", NonceOf(1)));
  EXPECT_FALSE(NodeFrameVerifies(frame, hello->mac, "s3cret", NonceOf(2)));  // replayed elsewhere
  EXPECT_FALSE(NodeFrameVerifies(frame, {}, "s3cret", NonceOf(1)));
  EXPECT_FALSE(NodeFrameVerifies(frame, hello->mac, {}, NonceOf(1)));
}

TEST(NodeHello, AChangedFieldNoLongerVerifies) {
  std::string frame = EncodeSignedNodeHello(SampleHello(), "s3cret", NonceOf(1));
  const size_t at = frame.find("node-b");
  ASSERT_NE(at, std::string::npos);
  frame[at + 5] = 'c';
  Result<NodeHello> hello = DecodeNodeHello(frame);
  KDIST_ASSERT_OK(hello);
  EXPECT_FALSE(NodeFrameVerifies(frame, hello->mac, "s3cret", NonceOf(1)));
}

TEST(NodeHello, WithoutATokenCarriesNoMacAndVerifiesOnlyWithout) {
  const std::string frame = EncodeSignedNodeHello(SampleHello(), {}, NonceOf(1));
  Result<NodeHello> hello = DecodeNodeHello(frame);
  KDIST_ASSERT_OK(hello);
  EXPECT_TRUE(hello->mac.empty());
  EXPECT_TRUE(NodeFrameVerifies(frame, hello->mac, {}, NonceOf(1)));
  EXPECT_FALSE(NodeFrameVerifies(frame, hello->mac, "s3cret", NonceOf(1)));
}

TEST(NodeHello, MissingFieldsAreNamed) {
  using testing::RawField;
  using testing::RawFrame;
  using testing::RawInteger;
  const std::string payload = RawField(2, RawInteger(1)) + RawField(4, "n");
  KDIST_EXPECT_ERROR(DecodeNodeHello(RawFrame(kProtocolVersion, kFrameNodeHello, payload)),
                     StatusCode::kInvalidArgument, "has no host field");
}

TEST(NodeHello, AWrongNonceSizeIsRefused) {
  using testing::RawField;
  using testing::RawFrame;
  const std::string payload = RawField(15, "short");
  KDIST_EXPECT_ERROR(DecodeNodeHello(RawFrame(kProtocolVersion, kFrameNodeHello, payload)),
                     StatusCode::kInvalidArgument, "field nonce is 5 bytes");
}

TEST(NodeHello, AnotherVersionIsAFailedPrecondition) {
  std::string frame = EncodeNodeHello(SampleHello());
  frame[5] = static_cast<char>(kProtocolVersion + 1);
  KDIST_EXPECT_ERROR(DecodeNodeHello(frame), StatusCode::kFailedPrecondition, "rendezvous");
}

TEST(NodeReply, RosterRoundTrips) {
  const NodeReply in = SampleRoster();
  Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->sequence, 3);
  EXPECT_EQ(out->kind, NodeReplyKind::kRoster);
  EXPECT_EQ(out->attempt, 1);
  EXPECT_EQ(out->node_rank, 1);
  EXPECT_EQ(out->processes_per_node, 2);
  EXPECT_EQ(out->coordinator_host, "10.0.0.1");
  EXPECT_EQ(out->coordinator_port, 41000);
  EXPECT_EQ(out->node_count, 2);
  EXPECT_EQ(out->first_failure, in.first_failure);
  EXPECT_EQ(out->message, in.message);
}

TEST(NodeReply, EndRoundTrips) {
  NodeReply in;
  in.kind = NodeReplyKind::kEnd;
  in.code = StatusCode::kDeadlineExceeded;
  in.message = "timed out";
  in.attempt = 0;
  in.exit_status = 75;
  Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->kind, NodeReplyKind::kEnd);
  EXPECT_EQ(out->code, StatusCode::kDeadlineExceeded);
  EXPECT_EQ(out->exit_status, 75);
}

TEST(NodeReply, SignedByTheRendezvousOverTheAgentsNonce) {
  const std::string frame = EncodeSignedNodeReply(SampleRoster(), "s3cret", NonceOf(7));
  Result<NodeReply> reply = DecodeNodeReply(frame);
  KDIST_ASSERT_OK(reply);
  EXPECT_TRUE(NodeFrameVerifies(frame, reply->mac, "s3cret", NonceOf(7)));
  EXPECT_FALSE(NodeFrameVerifies(frame, reply->mac, "s3cret", NonceOf(8)));
}

TEST(NodeReply, ARefusalWithoutACodeIsMalformed) {
  NodeReply in;
  in.kind = NodeReplyKind::kRefused;
  in.code = StatusCode::kOk;
  KDIST_EXPECT_ERROR(DecodeNodeReply(EncodeNodeReply(in)), StatusCode::kInvalidArgument,
                     "no failure code");
}

TEST(NodeReply, ARosterRankOutsideItsNodesIsMalformed) {
  NodeReply in = SampleRoster();
  in.node_rank = 2;
  KDIST_EXPECT_ERROR(DecodeNodeReply(EncodeNodeReply(in)), StatusCode::kInvalidArgument,
                     "node rank 2 is outside its 2 nodes");
}

TEST(NodeReply, AnUnknownKindIsMalformed) {
  using testing::RawField;
  using testing::RawFrame;
  using testing::RawInteger;
  const std::string payload =
      RawField(2, RawInteger(1)) + RawField(16, RawInteger(9)) + RawField(11, RawInteger(0));
  KDIST_EXPECT_ERROR(DecodeNodeReply(RawFrame(kProtocolVersion, kFrameNodeReply, payload)),
                     StatusCode::kInvalidArgument, "kind 9 is not known");
}

TEST(NodeReply, FieldsOfAnotherKindAreDropped) {
  // A refusal that also carries a coordinator host, an exit status and a first
  // failure (found by fuzz/rendezvous_wire: it decoded with the host, and its
  // encoding, which writes a refusal's own fields only, decoded without).
  using testing::RawField;
  using testing::RawFrame;
  using testing::RawInteger;
  const std::string payload = RawField(2, RawInteger(1)) + RawField(16, RawInteger(3)) +
                              RawField(11, RawInteger(1)) + RawField(19, "10.0.0.9") +
                              RawField(22, RawInteger(7)) + RawField(21, "boom");
  Result<NodeReply> decoded =
      DecodeNodeReply(RawFrame(kProtocolVersion, kFrameNodeReply, payload));
  KDIST_ASSERT_OK(decoded);
  EXPECT_EQ(decoded->kind, NodeReplyKind::kRefused);
  EXPECT_EQ(decoded->coordinator_host, "");
  EXPECT_EQ(decoded->exit_status, 0);
  EXPECT_EQ(decoded->first_failure, "");
  Result<NodeReply> again = DecodeNodeReply(EncodeNodeReply(*decoded));
  KDIST_ASSERT_OK(again);
  EXPECT_EQ(again->coordinator_host, decoded->coordinator_host);
}

TEST(NodeReport, RoundTripsAndVerifies) {
  NodeReport in;
  in.sequence = 2;
  in.attempt = 3;
  in.exit_status = 1;
  in.failure.kind = FailureKind::kProcess;
  in.failure.process_id = 2;
  in.failure.node = "node-b";
  in.failure.host = "box-b";
  in.failure.pid = 4242;
  in.failure.exit_status = 1;
  in.failure.ended_how = "exit 1";
  in.failure.what = "KeyError: 'x'";
  in.coordinator_port = 42000;
  const std::string frame = EncodeSignedNodeReport(in, "s3cret", NonceOf(3));
  Result<NodeReport> out = DecodeNodeReport(frame);
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->attempt, 3);
  EXPECT_EQ(out->exit_status, 1);
  EXPECT_EQ(out->failure.Text(), in.failure.Text());
  EXPECT_TRUE(out->failure.SamePoint(in.failure));
  EXPECT_EQ(out->failure.pid, 4242);
  EXPECT_EQ(out->coordinator_port, 42000);
  EXPECT_TRUE(NodeFrameVerifies(frame, out->mac, "s3cret", NonceOf(3)));
}

TEST(NodeReport, WithoutAFailureCarriesNone) {
  NodeReport in;
  in.exit_status = 143;
  in.coordinator_port = 42000;
  Result<NodeReport> out = DecodeNodeReport(EncodeNodeReport(in));
  KDIST_ASSERT_OK(out);
  EXPECT_FALSE(out->failure.failed());
  EXPECT_EQ(out->exit_status, 143);
}

TEST(NodeReport, AnUnknownFailureKindIsRefused) {
  NodeReport in;
  in.failure.kind = FailureKind::kProcess;
  std::string frame = EncodeNodeReport(in);
  // The kind field (tag 26, an 8-byte integer) holds 1; make it 9.
  const std::string kind_field = std::string("\x1a\x00\x08", 3) + std::string(7, '\0') + "\x01";
  const size_t at = frame.find(kind_field);
  ASSERT_NE(at, std::string::npos);
  frame[at + kind_field.size() - 1] = 9;
  KDIST_EXPECT_ERROR(DecodeNodeReport(frame), StatusCode::kInvalidArgument,
                     "field failure kind is 9; expected 0-4");
}

TEST(NodeReport, AFailuresFieldsWithoutItsKindAreRefused) {
  // An older wire sent the failure as a sentence (tag 23) with no kind: dropping it
  // unread would end the attempt as if nothing had failed.
  NodeReport in;
  in.failure.kind = FailureKind::kProcess;
  in.failure.what = "RuntimeError: boom";
  std::string frame = EncodeNodeReport(in);
  const std::string kind_field = std::string("\x1a\x00\x08", 3) + std::string(7, '\0') + "\x01";
  const size_t at = frame.find(kind_field);
  ASSERT_NE(at, std::string::npos);
  frame[at + kind_field.size() - 1] = 0;
  KDIST_EXPECT_ERROR(DecodeNodeReport(frame), StatusCode::kInvalidArgument,
                     "has failure fields (tag 27) but no failure kind");
}

TEST(NodeReply, ARosterCarriesThePreviousProcessCount) {
  NodeReply in = SampleRoster();
  Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->previous_processes, 0);
  in.previous_processes = 6;
  out = DecodeNodeReply(EncodeNodeReply(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->previous_processes, 6);
}

TEST(NodeReply, StopRoundTripsWithItsAttempt) {
  NodeReply in;
  in.kind = NodeReplyKind::kStop;
  in.attempt = 4;
  in.message = "node b is drained";
  Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->kind, NodeReplyKind::kStop);
  EXPECT_EQ(out->attempt, 4);
  EXPECT_EQ(out->message, "node b is drained");
}

TEST(NodeReport, ADrainNoticeRoundTripsAndAnEndReportIsNone) {
  NodeReport in;
  in.attempt = 2;
  in.exit_status = 143;
  in.coordinator_port = 42000;
  in.drain = true;
  Result<NodeReport> out = DecodeNodeReport(EncodeSignedNodeReport(in, "s3cret", NonceOf(3)));
  KDIST_ASSERT_OK(out);
  EXPECT_TRUE(out->drain);
  in.drain = false;
  out = DecodeNodeReport(EncodeNodeReport(in));
  KDIST_ASSERT_OK(out);
  EXPECT_FALSE(out->drain);
}

TEST(NodeReport, APortOutOfRangeIsRefused) {
  NodeReport in;
  in.coordinator_port = 70000;
  KDIST_EXPECT_ERROR(DecodeNodeReport(EncodeNodeReport(in)), StatusCode::kInvalidArgument,
                     "outside 0-65535");
}

// A roster carries the node count, not the list: each agent's roster is the same size at
// any job size (N agents told a whole list would be N * N bytes).
TEST(NodeReply, ARosterIsTheSameSizeAtAnyNodeCount) {
  NodeReply small = SampleRoster();
  NodeReply large = SampleRoster();
  large.node_count = 16384;
  large.node_rank = 16383;
  EXPECT_EQ(EncodeNodeReply(small).size(), EncodeNodeReply(large).size());
  Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(large));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->node_count, 16384);
  EXPECT_EQ(out->node_rank, 16383);
}

TEST(NodeReply, ARosterWithoutANodeCountIsMalformed) {
  NodeReply in = SampleRoster();
  in.node_count = 0;
  in.node_rank = 0;
  KDIST_EXPECT_ERROR(DecodeNodeReply(EncodeNodeReply(in)), StatusCode::kInvalidArgument,
                     "node rank 0 is outside its 0 nodes");
}

// The decoders survive any input: random bytes and every cut of valid frames.
TEST(RendezvousWire, DecodersSurviveAnyInput) {
  SplitMix64 random(43);
  const std::string frames[] = {EncodeSignedNodeHello(SampleHello(), "t", NonceOf(1)),
                                EncodeSignedNodeReply(SampleRoster(), "t", NonceOf(1)),
                                EncodeNodeReport(NodeReport{})};
  for (const std::string& frame : frames) {
    for (size_t cut = 0; cut <= frame.size(); ++cut) {
      const std::string part = frame.substr(0, cut);
      (void)DecodeNodeHello(part);
      (void)DecodeNodeReply(part);
      (void)DecodeNodeReport(part);
    }
    for (int round = 0; round < 2000; ++round) {
      std::string mutated = frame;
      mutated[random.Next() % mutated.size()] = static_cast<char>(random.Next() & 0xff);
      (void)DecodeNodeHello(mutated);
      (void)DecodeNodeReply(mutated);
      (void)DecodeNodeReport(mutated);
      (void)NodeFrameVerifies(mutated, std::string(kMacBytes, 'x'), "t", NonceOf(1));
    }
  }
}

TEST(NodeHello, APurposeRoundTripsAndAJoinCarriesNone) {
  NodeHello hello;
  hello.job_id = "job";
  const std::string join = EncodeNodeHello(hello);
  hello.purpose = NodePurpose::kStop;
  const std::string stop = EncodeNodeHello(hello);
  EXPECT_LT(join.size(), stop.size());  // the field only when not a join
  Result<NodeHello> out = DecodeNodeHello(stop);
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->purpose, NodePurpose::kStop);
  out = DecodeNodeHello(join);
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->purpose, NodePurpose::kJoin);
}

TEST(NodeReply, ARosterCarriesTheRunAndNoOtherKindDoes) {
  NodeReply roster = SampleRoster();
  roster.run_id = "feedface";
  Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(roster));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->run_id, "feedface");
  NodeReply end;
  end.kind = NodeReplyKind::kEnd;
  end.run_id = "feedface";
  out = DecodeNodeReply(EncodeNodeReply(end));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->run_id, "");
}


TEST(NodeReport, ProgressRoundTrips) {
  NodeReport in;
  in.exit_status = 143;
  in.coordinator_port = 42000;
  in.progressed = true;
  Result<NodeReport> out = DecodeNodeReport(EncodeNodeReport(in));
  KDIST_ASSERT_OK(out);
  EXPECT_TRUE(out->progressed);
  in.progressed = false;
  out = DecodeNodeReport(EncodeNodeReport(in));
  KDIST_ASSERT_OK(out);
  EXPECT_FALSE(out->progressed);
}

TEST(NodeReport, StepsRoundTripAndNoStepIsMinusOne) {
  NodeReport in;
  in.coordinator_port = 0;
  in.steps_only = true;
  in.first_step = 40;
  in.first_step_unix_millis = 1'700'000'000'123;
  in.step = 97;
  in.step_unix_millis = 1'700'000'005'456;
  Result<NodeReport> out = DecodeNodeReport(EncodeNodeReport(in));
  KDIST_ASSERT_OK(out);
  EXPECT_TRUE(out->steps_only);
  EXPECT_EQ(out->first_step, 40);
  EXPECT_EQ(out->first_step_unix_millis, 1'700'000'000'123);
  EXPECT_EQ(out->step, 97);
  EXPECT_EQ(out->step_unix_millis, 1'700'000'005'456);
  NodeReport none;  // no step: no field, and -1 back
  out = DecodeNodeReport(EncodeNodeReport(none));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->first_step, -1);
  EXPECT_EQ(out->step, -1);
  EXPECT_FALSE(out->steps_only);
}

TEST(NodeReply, AStatusAnswerCarriesItsJsonAndNoOtherKindDoes) {
  NodeReply in;
  in.kind = NodeReplyKind::kStatus;
  in.status = "{\"schema\":1}";
  Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->kind, NodeReplyKind::kStatus);
  EXPECT_EQ(out->status, "{\"schema\":1}");
  in.kind = NodeReplyKind::kWaiting;
  out = DecodeNodeReply(EncodeNodeReply(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->status, "");
}

TEST(NodeHello, AStatusRequestRoundTripsItsPurpose) {
  NodeHello in;
  in.node_name = "kdist-status";
  in.host = "laptop";
  in.purpose = NodePurpose::kStatus;
  Result<NodeHello> out = DecodeNodeHello(EncodeNodeHello(in));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->purpose, NodePurpose::kStatus);
}

TEST(NodeReply, HowTheLastAttemptEndedTravelsWithARosterOrAWaitingLineOnly) {
  for (const NodeReplyKind kind : {NodeReplyKind::kRoster, NodeReplyKind::kWaiting}) {
    NodeReply in;
    in.kind = kind;
    in.node_count = 1;
    in.processes_per_node = 1;
    in.coordinator_host = "10.0.0.1";
    in.coordinator_port = 5000;
    in.ended = "attempt 1 ended: node h1 (host h1, at 10.0.0.2) joined";
    Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(in));
    KDIST_ASSERT_OK(out);
    EXPECT_EQ(out->ended, in.ended);
    EXPECT_EQ(out->first_failure, "");
  }
  NodeReply end;
  end.kind = NodeReplyKind::kEnd;
  end.code = StatusCode::kOk;
  end.ended = "attempt 1 ended: node h1 joined";
  Result<NodeReply> out = DecodeNodeReply(EncodeNodeReply(end));
  KDIST_ASSERT_OK(out);
  EXPECT_EQ(out->ended, "");
}

}  // namespace
}  // namespace kdist
