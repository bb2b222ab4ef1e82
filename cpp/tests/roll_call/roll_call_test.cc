#include "roll_call/roll_call.h"

#include "base/text.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

Hello Process(int64_t id, int64_t n = 4, std::string host = "", int64_t pid = 0) {
  Hello h;
  h.process_id = id;
  h.num_processes = n;
  h.coordinator = "127.0.0.1:5000";
  h.fingerprint = "fp-" + std::to_string(n);
  h.num_processes_source = "KERAS_DISTRIBUTION_NUM_PROCESSES";
  h.coordinator_source = "KERAS_DISTRIBUTION_JOB_ADDRESSES";
  h.host = host.empty() ? "node-" + std::to_string(id) : host;
  h.pid = pid == 0 ? 1000 + id : pid;
  return h;
}

using Outcome = RollCall::Outcome;

Nonce TestNonce(uint8_t first) {
  Nonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(first + i);
  return nonce;
}

// Offers `hello` as process 0 receives it when the process signed it (with
// its token, if any) for the challenge `signed_for`, on a connection that
// process 0 challenged with `sent`.
RollCall::Verdict OfferSigned(RollCall& call, uint64_t connection, const Hello& hello,
                              const Nonce& sent = TestNonce(1),
                              const Nonce& signed_for = TestNonce(1)) {
  const std::string frame = EncodeSignedHello(hello, signed_for);
  Result<Hello> received = DecodeHello(frame);
  Result<std::string> covered = FrameMacInput(frame);
  if (!received.ok() || !covered.ok()) return {Outcome::kFailed, Internal("cannot decode")};
  return call.Offer(connection, *received, RollCall::Arrival{sent, *covered});
}

TEST(RollCall, CompletesWhenEveryIdIsPresent) {
  RollCall call(Process(0));
  EXPECT_EQ(call.joined(), int64_t{1});
  EXPECT_EQ(call.MissingIds(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(call.Offer(11, Process(2)).outcome == Outcome::kJoined);
  EXPECT_EQ(call.ProgressLine("12 s of 300 s"),
                  std::string("2 of 4 processes joined; missing process ids [1, 3]; 12 s of 300 s"));
  EXPECT_TRUE(call.Offer(12, Process(1)).outcome == Outcome::kJoined);
  EXPECT_FALSE(call.complete());
  EXPECT_TRUE(call.Offer(13, Process(3)).outcome == Outcome::kJoined);
  EXPECT_TRUE(call.complete());
  EXPECT_EQ(call.MissingIds().size(), size_t{0});
  EXPECT_EQ(*call.ConnectionOf(3), uint64_t{13});
}

TEST(RollCall, SingleProcessIsCompleteAtOnce) {
  RollCall call(Process(0, 1));
  EXPECT_TRUE(call.complete());
}

TEST(RollCall, ALeaverIsMissingAgainUntilItsIdReturns) {
  RollCall call(Process(0, 3));
  EXPECT_TRUE(call.Offer(1, Process(1, 3)).outcome == Outcome::kJoined);
  EXPECT_EQ(*call.Leave(1), int64_t{1});
  EXPECT_FALSE(call.Leave(1).has_value());
  EXPECT_FALSE(call.Leave(99).has_value());
  EXPECT_EQ(call.MissingIds(), (std::vector<int64_t>{1, 2}));
  // A restarted process with the same id (another pid) may rejoin.
  EXPECT_TRUE(call.Offer(5, Process(1, 3, "node-1", 7777)).outcome == Outcome::kJoined);
  EXPECT_EQ(call.members().at(1).hello.pid, int64_t{7777});
  EXPECT_EQ(call.MissingIds(), (std::vector<int64_t>{2}));
}

TEST(RollCall, DuplicateIdFailsNamingBothClaimants) {
  RollCall call(Process(0, 3));
  EXPECT_TRUE(call.Offer(1, Process(1, 3, "alpha", 111)).outcome == Outcome::kJoined);
  RollCall::Verdict v = call.Offer(2, Process(1, 3, "beta", 222));
  EXPECT_TRUE(v.outcome == Outcome::kFailed);
  KDIST_EXPECT_ERROR(v.status, StatusCode::kFailedPrecondition,
                     "process id 1 is claimed twice: by the process on host alpha, pid 111, and "
                     "by the process on host beta, pid 222");
  // The first claimant keeps its place (process 0 decides what happens next).
  EXPECT_EQ(*call.ConnectionOf(1), uint64_t{1});
}

TEST(RollCall, ClaimingProcessZeroIsADuplicateOfTheCoordinator) {
  RollCall call(Process(0, 2, "head", 5));
  RollCall::Verdict v = call.Offer(1, Process(0, 2, "other", 6));
  EXPECT_TRUE(v.outcome == Outcome::kFailed);
  KDIST_EXPECT_ERROR(v.status, StatusCode::kFailedPrecondition,
                     "process id 0 is claimed twice: by process 0 (host head, pid 5), the "
                     "coordinator, and by the process on host other, pid 6");
}

TEST(RollCall, DifferentNumProcessesNamesBothValuesAndSources) {
  RollCall call(Process(0, 2));
  Hello other = Process(1, 3);
  other.num_processes_source = "argument";
  RollCall::Verdict v = call.Offer(1, other);
  EXPECT_TRUE(v.outcome == Outcome::kFailed);
  KDIST_EXPECT_ERROR(v.status, StatusCode::kFailedPrecondition,
                     "process 1 (host node-1, pid 1001) has num_processes=3 (from argument) but "
                     "process 0 (host node-0, pid 1000) has num_processes=2 (from "
                     "KERAS_DISTRIBUTION_NUM_PROCESSES)");
}

TEST(RollCall, DifferentCoordinatorAddressNamesBoth) {
  RollCall call(Process(0, 2));
  Hello other = Process(1, 2);
  other.coordinator = "localhost:5000";
  RollCall::Verdict v = call.Offer(1, other);
  EXPECT_TRUE(v.outcome == Outcome::kFailed);
  KDIST_EXPECT_ERROR(v.status, StatusCode::kFailedPrecondition,
                     "has localhost:5000 (from KERAS_DISTRIBUTION_JOB_ADDRESSES) but process 0 "
                     "(host node-0, pid 1000) has 127.0.0.1:5000");
}

TEST(RollCall, DifferentFingerprintFails) {
  RollCall call(Process(0, 2));
  Hello other = Process(1, 2);
  other.fingerprint = "something-else";
  KDIST_EXPECT_ERROR(call.Offer(1, other).status, StatusCode::kFailedPrecondition,
                     "fingerprint something-else but process 0");
}

TEST(RollCall, OutOfRangeIdsFail) {
  RollCall call(Process(0, 2));
  KDIST_EXPECT_ERROR(call.Offer(1, Process(2, 2)).status, StatusCode::kFailedPrecondition,
                     "process id 2 of process 2 (host node-2, pid 1002) is outside [0, 2)");
  KDIST_EXPECT_ERROR(call.Offer(1, Process(-1, 2)).status, StatusCode::kFailedPrecondition,
                     "process id -1");
}

TEST(RollCall, WrongTokenRefusesOnlyThatHello) {
  Hello own = Process(0, 2);
  own.token = "right";
  RollCall call(own);
  Hello wrong = Process(1, 2);
  wrong.token = "wrong";
  RollCall::Verdict v = OfferSigned(call, 1, wrong);
  EXPECT_TRUE(v.outcome == Outcome::kRefused);
  KDIST_EXPECT_ERROR(v.status, StatusCode::kFailedPrecondition,
                     "its KDIST_ROLL_CALL_TOKEN does not match the one of process 0");
  EXPECT_TRUE(v.status.message().find("\"right\"") == std::string::npos);
  Hello none = Process(1, 2);
  KDIST_EXPECT_ERROR(OfferSigned(call, 2, none).status, StatusCode::kFailedPrecondition,
                     "sent no KDIST_ROLL_CALL_TOKEN");
  EXPECT_EQ(call.joined(), int64_t{1});
  Hello right = Process(1, 2);
  right.token = "right";
  EXPECT_TRUE(OfferSigned(call, 3, right).outcome == Outcome::kJoined);
  EXPECT_TRUE(call.complete());
}

TEST(RollCall, TokenOnlyOnTheWorkerIsRefused) {
  RollCall call(Process(0, 2));
  Hello extra = Process(1, 2);
  extra.token = "x";
  KDIST_EXPECT_ERROR(OfferSigned(call, 1, extra).status, StatusCode::kFailedPrecondition,
                     "has none set");
}

TEST(RollCall, TokenIsCheckedBeforeAnythingAStrangerCouldBreak) {
  Hello own = Process(0, 2);
  own.token = "right";
  RollCall call(own);
  Hello stranger = Process(0, 99);  // would be fatal twice over if trusted
  stranger.token = "nope";
  EXPECT_TRUE(OfferSigned(call, 1, stranger).outcome == Outcome::kRefused);
}

TEST(RollCall, AHelloSignedForAnotherConnectionsChallengeIsRefused) {
  Hello own = Process(0, 2);
  own.token = "right";
  RollCall call(own);
  Hello replayed = Process(1, 2);
  replayed.token = "right";
  RollCall::Verdict v = OfferSigned(call, 1, replayed, /*sent=*/TestNonce(2),
                                    /*signed_for=*/TestNonce(1));
  EXPECT_TRUE(v.outcome == Outcome::kRefused);
  KDIST_EXPECT_ERROR(v.status, StatusCode::kFailedPrecondition,
                     "its KDIST_ROLL_CALL_TOKEN does not match the one of process 0");
  EXPECT_EQ(call.joined(), int64_t{1});
  // The same hello signed for this connection's challenge joins.
  EXPECT_TRUE(OfferSigned(call, 2, replayed, TestNonce(2), TestNonce(2)).outcome ==
              Outcome::kJoined);
}

TEST(RollCall, AMacWithoutItsArrivalNeverVerifies) {
  Hello own = Process(0, 2);
  own.token = "right";
  RollCall call(own);
  Hello signed_hello = Process(1, 2);
  signed_hello.token = "right";
  Result<Hello> received = DecodeHello(EncodeSignedHello(signed_hello, Nonce{}));
  KDIST_ASSERT_OK(received);
  EXPECT_TRUE(call.Offer(1, *received).outcome == Outcome::kRefused);  // no Arrival given
}

TEST(RollCall, RefusalsShowNeitherTokenNorMac) {
  Hello own = Process(0, 2);
  own.token = "right-secret";
  RollCall call(own);
  Hello wrong = Process(1, 2);
  wrong.token = "wrong-secret";
  const std::string frame = EncodeSignedHello(wrong, TestNonce(1));
  Result<Hello> received = DecodeHello(frame);
  KDIST_ASSERT_OK(received);
  Result<std::string> covered = FrameMacInput(frame);
  KDIST_ASSERT_OK(covered);
  const Status refused = call.Offer(1, *received, {TestNonce(1), *covered}).status;
  const std::string expected_mac = FrameMac("right-secret", TestNonce(1), *covered);
  const std::string timed_out = call.TimedOut("1 s", "[::]:5000").message();
  for (const std::string& text : {refused.message(), timed_out}) {
    EXPECT_EQ(text.find("secret"), std::string::npos) << text;
    EXPECT_EQ(text.find(received->mac), std::string::npos) << text;
    EXPECT_EQ(text.find(expected_mac), std::string::npos) << text;
    EXPECT_EQ(text.find(Quote(received->mac, 1000).substr(1, 8)), std::string::npos) << text;
  }
}

TEST(RollCall, TimeoutNamesTheMissingAndTheNotes) {
  Hello own = Process(0, 4);
  own.token = "t";
  RollCall call(own);
  Hello p2 = Process(2, 4);
  p2.token = "t";
  EXPECT_TRUE(OfferSigned(call, 1, p2).outcome == Outcome::kJoined);
  Hello bad = Process(3, 4);
  bad.token = "x";
  (void)OfferSigned(call, 2, bad);
  call.NoteDropped("it does not start with the kdist magic; received \"GET / HTTP/1\"");
  Status status = call.TimedOut("3 s", "[::]:5000");
  KDIST_EXPECT_ERROR(status, StatusCode::kDeadlineExceeded,
                     "the roll call timed out after 3 s with 2 of 4 joined; missing process ids "
                     "[1, 3].");
  KDIST_EXPECT_ERROR(status, StatusCode::kDeadlineExceeded,
                     "refused process 3 (host node-3, pid 1003): wrong KDIST_ROLL_CALL_TOKEN");
  KDIST_EXPECT_ERROR(status, StatusCode::kDeadlineExceeded, "dropped a connection");
  EXPECT_EQ(call.dropped(), int64_t{1});
  EXPECT_TRUE(call.ProgressLine("1 s").find("dropped 1 connection that") !=
                    std::string::npos);
}

TEST(RollCall, UntrustedNamesAreQuoted) {
  RollCall call(Process(0, 3));
  EXPECT_TRUE(call.Offer(1, Process(1, 3, "ok-host", 5)).outcome == Outcome::kJoined);
  Hello evil = Process(1, 3, "evil\x1b[31m host", 6);
  Status s = call.Offer(2, evil).status;
  EXPECT_TRUE(s.message().find('\x1b') == std::string::npos);
  EXPECT_TRUE(s.message().find("\"evil\\x1b[31m host\"") != std::string::npos);
  EXPECT_EQ(SafeText("node-1.cluster"), std::string("node-1.cluster"));
  EXPECT_EQ(SafeText(""), std::string("\"\""));
  EXPECT_EQ(SafeText("[::1]:5", "._-:[]%"), std::string("[::1]:5"));
}

TEST(RollCall, MissingProcessesAreNamedWithTheirHostsWhereKnown) {
  Hello own = Process(0, 6);
  RollCall call(own, {}, ConsistencyPolicy::kOff,
                {"node-0", "node-1", "node-2", "node-3", "node-4", "node-5"});
  EXPECT_EQ(call.Offer(1, Process(2, 6)).outcome, RollCall::Outcome::kJoined);
  EXPECT_EQ(call.ProgressLine("1 s of 300 s"),
            "2 of 6 processes joined; missing process ids [1, 3-5] on hosts node-[1,3-5]; 1 s of "
            "300 s");
  RollCall unknown(own);
  EXPECT_EQ(unknown.ProgressLine("t"), "1 of 6 processes joined; missing process ids [1-5]; t");
}

}  // namespace
}  // namespace kdist
