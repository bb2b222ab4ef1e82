// A book saved and restored (as the machine that takes a job's book over from etcd restores
// it) decides exactly as the original would: the same state, byte for byte, once its
// agents are back, and the same messages for the same events after, in every phase.
#include "rendezvous/rendezvous_state.h"

#include <gtest/gtest.h>

#include "testing/rendezvous_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

// A book kept in a store (its nodes' environments kept, as the server's PersistWith asks).
RendezvousOptions Stored(int64_t min_nodes, int64_t max_nodes) {
  RendezvousOptions options = Options(min_nodes, max_nodes);
  options.keep_environments = true;
  return options;
}

// The book restored from `book`'s state saved at `saved`, at `now`.
RendezvousBook Restored(const RendezvousBook& book, Nanos saved, Nanos now) {
  Result<RendezvousBook> restored =
      RestoreBook(book.options(), SaveBook(book, saved, book.options().token), now);
  EXPECT_TRUE(restored.ok()) << restored.status().message();
  return std::move(restored).value();
}

// `agent` comes back to a restored book on the same connection, as its agent would.
std::vector<NodeMessage> Back(RendezvousBook& book, const Agent& agent, Nanos now) {
  Agent a = agent;
  a.hello.purpose = NodePurpose::kRejoin;
  return Join(book, a, now);
}

// Two message lists say the same, field by field (the reply's sequence and MAC are the
// server's).
void ExpectSame(const std::vector<NodeMessage>& original, const std::vector<NodeMessage>& restored) {
  ASSERT_EQ(original.size(), restored.size());
  for (size_t i = 0; i < original.size(); ++i) {
    const NodeReply& a = original[i].reply;
    const NodeReply& b = restored[i].reply;
    EXPECT_EQ(original[i].connection, restored[i].connection) << i;
    EXPECT_EQ(a.kind, b.kind) << i;
    EXPECT_EQ(a.code, b.code) << i;
    EXPECT_EQ(a.message, b.message) << i;
    EXPECT_EQ(a.attempt, b.attempt) << i;
    EXPECT_EQ(a.node_rank, b.node_rank) << i;
    EXPECT_EQ(a.processes_per_node, b.processes_per_node) << i;
    EXPECT_EQ(a.coordinator_host, b.coordinator_host) << i;
    EXPECT_EQ(a.coordinator_port, b.coordinator_port) << i;
    EXPECT_EQ(a.node_count, b.node_count) << i;
    EXPECT_EQ(a.previous_processes, b.previous_processes) << i;
    EXPECT_EQ(a.first_failure, b.first_failure) << i;
    EXPECT_EQ(a.exit_status, b.exit_status) << i;
  }
}

TEST(RendezvousState, ABookRestoredWithItsAgentsBackIsTheSameStateByteForByte) {
  ThreeNodes job(Stored(2, 3));
  (void)Report(job.book, job.b, 0, 1, Raised(2, "b", "KeyError: 'x'"), 42002, seconds(20));
  // Restored a minute later: every time moves with it, so the state is the same bytes.
  RendezvousBook restored = Restored(job.book, seconds(20), seconds(80));
  EXPECT_EQ(restored.DetachedNodes(), (std::vector<std::string>{"a", "b", "c"}));
  for (const Agent* agent : {&job.a, &job.b, &job.c}) (void)Back(restored, *agent, seconds(80));
  EXPECT_TRUE(restored.DetachedNodes().empty());
  EXPECT_EQ(restored.EncodeState(), job.book.EncodeState());
  EXPECT_EQ(restored.AttemptTable(), job.book.AttemptTable());
  EXPECT_EQ(restored.phase(), RendezvousBook::Phase::kRunning);
  EXPECT_EQ(restored.attempt(), 0);
}

TEST(RendezvousState, AFailureDecidedAfterTheRestoreIsTheOriginalsDecision) {
  RendezvousOptions options = Stored(2, 3);
  options.ledger.max_restarts = 1;
  ThreeNodes job(options);
  (void)Report(job.book, job.b, 0, 1, Raised(2, "b", "KeyError: 'x'"), 42002, seconds(20));
  RendezvousBook restored = Restored(job.book, seconds(20), seconds(20));
  for (const Agent* agent : {&job.a, &job.b, &job.c}) (void)Back(restored, *agent, seconds(20));
  for (Agent* agent : {&job.a, &job.c}) {
    Agent twin = *agent;
    ExpectSame(Report(job.book, *agent, 0, 1, {}, 42001, seconds(21)),
               Report(restored, twin, 0, 1, {}, 42001, seconds(21)));
  }
  // The same failure at the same point in attempt 1: both end the job with 1.
  for (Agent* agent : {&job.a, &job.b, &job.c}) {
    Agent twin = *agent;
    const JobFailure failure = agent == &job.b ? Raised(2, "b", "KeyError: 'x'") : JobFailure{};
    ExpectSame(Report(job.book, *agent, 1, 1, failure, 43001, seconds(30)),
               Report(restored, twin, 1, 1, failure, 43001, seconds(30)));
  }
  EXPECT_EQ(job.book.phase(), RendezvousBook::Phase::kEnded);
  EXPECT_EQ(restored.exit_status(), job.book.exit_status());
  EXPECT_EQ(restored.AttemptTable(), job.book.AttemptTable());
}

TEST(RendezvousState, AGatheringGoesOnWithTheSameLastCallAndJoinTimeout) {
  RendezvousBook book(Stored(2, 3), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  Agent c = MakeAgent(3, "c", "10.0.0.3");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(4));
  // Saved at 5 s, restored at 105 s: the last call (10 s after b) ends at 114 s there.
  RendezvousBook restored = Restored(book, seconds(5), seconds(105));
  (void)Back(restored, a, seconds(105));
  (void)Back(restored, b, seconds(105));
  EXPECT_TRUE(restored.Tick(seconds(113)).empty());
  ExpectSame(book.Tick(seconds(14)), restored.Tick(seconds(114)));
  EXPECT_EQ(restored.phase(), RendezvousBook::Phase::kRunning);
  (void)c;
}

TEST(RendezvousState, ALostNodesReformIsTheSameAndStaysUncounted) {
  ThreeNodes job(Stored(2, 3));
  (void)job.book.Leave(job.c.connection, seconds(10));
  (void)Report(job.book, job.b, 0, 1, {}, 42002, seconds(11));
  RendezvousBook restored = Restored(job.book, seconds(11), seconds(11));
  EXPECT_EQ(restored.DetachedNodes(), (std::vector<std::string>{"a", "b"}));  // c: lost
  (void)Back(restored, job.a, seconds(11));
  (void)Back(restored, job.b, seconds(11));
  Agent twin = job.a;
  ExpectSame(Report(job.book, job.a, 0, 1, {}, 42001, seconds(12)),
             Report(restored, twin, 0, 1, {}, 42001, seconds(12)));
  EXPECT_EQ(restored.AttemptTable(), job.book.AttemptTable());
  EXPECT_FALSE(restored.Attempts()[0].counted);
}

TEST(RendezvousState, TheThrashGuardRemembersTheReformsBeforeTheRestore) {
  RendezvousOptions options = Stored(1, 3);
  options.ledger.max_reforms = 1;
  ThreeNodes job(options);
  (void)job.book.Leave(job.c.connection, seconds(10));
  (void)Report(job.book, job.b, 0, 1, {}, 42002, seconds(11));
  (void)Report(job.book, job.a, 0, 1, {}, 42001, seconds(12));  // re-form 1
  RendezvousBook restored = Restored(job.book, seconds(12), seconds(12));
  (void)Back(restored, job.a, seconds(12));
  (void)Back(restored, job.b, seconds(12));
  ExpectSame(job.book.Leave(job.b.connection, seconds(20)), restored.Leave(job.b.connection, seconds(20)));
  Agent twin = job.a;
  const auto original = Report(job.book, job.a, 1, 1, {}, 43001, seconds(21));
  ExpectSame(original, Report(restored, twin, 1, 1, {}, 43001, seconds(21)));
  ASSERT_EQ(OfKind(original, NodeReplyKind::kEnd).size(), 1u);
  EXPECT_NE(original[0].reply.message.find("thrash guard"), std::string::npos);
}

TEST(RendezvousState, GrowthAndItsScaleUpDelaySurviveTheRestore) {
  RendezvousOptions options = Stored(2, 3);
  options.scale_up_after = seconds(5);
  TwoOfThree job(options);
  (void)Join(job.book, job.c, seconds(20));  // joining: the attempt stops at 25 s
  RendezvousBook restored = Restored(job.book, seconds(21), seconds(21));
  for (const Agent* agent : {&job.a, &job.b, &job.c}) (void)Back(restored, *agent, seconds(21));
  EXPECT_EQ(restored.NextDeadline(), job.book.NextDeadline());
  ExpectSame(job.book.Tick(seconds(25)), restored.Tick(seconds(25)));
  for (Agent* agent : {&job.a, &job.b}) {
    Agent twin = *agent;
    ExpectSame(Report(job.book, *agent, 0, 143, {}, 42001, seconds(26)),
               Report(restored, twin, 0, 143, {}, 42001, seconds(26)));
  }
  EXPECT_EQ(restored.NodeNames(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(RendezvousState, EnvironmentDifferencesAreComparedAsBefore) {
  RendezvousBook book(Stored(2, 3), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  Agent c = MakeAgent(3, "c", "10.0.0.3");
  b.hello.environment = EncodeFingerprint(Environment("0.7.0", "3.12.0"));
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  RendezvousBook restored = Restored(book, seconds(2), seconds(2));
  (void)Back(restored, a, seconds(2));
  (void)Back(restored, b, seconds(2));
  // A third whose jax differs (must match) is refused by both, in the same words.
  c.hello.environment = EncodeFingerprint(Environment("0.6.0"));
  ExpectSame(Join(book, c, seconds(3)), Join(restored, c, seconds(3)));
  // The job forms with the same notes (python differs on b).
  const auto original = book.Tick(seconds(12));
  ExpectSame(original, restored.Tick(seconds(12)));
  ASSERT_FALSE(original.empty());
  EXPECT_NE(original[0].reply.message.find("python"), std::string::npos);
}

TEST(RendezvousState, ASealedStateVerifiesOnlyUnderTheJobsToken) {
  ThreeNodes job(Stored(2, 3));
  const std::string sealed = SaveBook(job.book, seconds(5), kToken);
  KDIST_EXPECT_OK(OpenBookState(sealed, kToken));
  const Result<SavedBookState> other = OpenBookState(sealed, "another-token");
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("does not verify"), std::string::npos);
  std::string tampered = sealed;
  tampered[tampered.size() - 3] ^= 1;  // a byte of the state changed by another hand
  EXPECT_EQ(OpenBookState(tampered, kToken).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(OpenBookState("{}", kToken).status().code(), StatusCode::kInvalidArgument);
  // Another job's options refuse it, naming both.
  RendezvousOptions mine = Stored(2, 4);
  const Result<RendezvousBook> restored = RestoreBook(mine, sealed, seconds(6));
  EXPECT_EQ(restored.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(restored.status().message().find("--nodes 2:3"), std::string::npos);
}

TEST(RendezvousState, TheTimeSinceTheSaveCountsByTheWallClock) {
  RendezvousBook book(Stored(2, 3), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(4));  // the last call ends at 14 s
  // Saved at 5 s (wall 1000 s), restored 6 s of wall clock later at monotonic 500 s: the
  // last call ends 3 s after the restore, as it would have on the lost machine.
  const std::string sealed = SaveBook(book, seconds(5), kToken, 1'000'000);
  Result<RendezvousBook> restored = RestoreBook(book.options(), sealed, seconds(500), 1'006'000);
  KDIST_ASSERT_OK(restored);
  EXPECT_EQ(restored->NextDeadline(), std::optional<Nanos>(seconds(503)));
  // A wall clock behind the save's counts no gap; one far ahead, at most an hour.
  Result<RendezvousBook> behind = RestoreBook(book.options(), sealed, seconds(500), 999'000);
  KDIST_ASSERT_OK(behind);
  EXPECT_EQ(behind->NextDeadline(), std::optional<Nanos>(seconds(509)));
}

TEST(RendezvousState, AMalformedStateIsRefusedNamingWhatIsWrong) {
  const std::string state = R"({"version": 1, "job_id": "job", "min_nodes": 2, "max_nodes": 3,
      "processes_per_node": 2, "run_id": "run", "wall_start_unix_millis": 0,
      "phase": "running"})";
  const Result<RendezvousBook> restored =
      RestoreBook(Stored(2, 3), SealBookState(state, seconds(1), kToken), seconds(1));
  EXPECT_EQ(restored.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(restored.status().message().find("state.phase"), std::string::npos)
      << restored.status().message();
  EXPECT_EQ(RestoreBook(Stored(2, 3), SealBookState("[1,", seconds(1), kToken), seconds(1))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kdist
