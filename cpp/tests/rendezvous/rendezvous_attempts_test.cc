#include <gtest/gtest.h>

#include "rendezvous/rendezvous_book.h"
#include "testing/rendezvous_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

TEST(RendezvousAttempts, AllPassedEndsWithZero) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  EXPECT_TRUE(Report(book, a, 0, 0, {}, 41001, seconds(3)).empty());
  const auto ends = OfKind(Report(book, b, 0, 0, {}, 41002, seconds(4)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 0);
  EXPECT_EQ(book.exit_status(), 0);
  EXPECT_NE(book.AttemptTable().find("finished"), std::string::npos);
  ASSERT_EQ(book.Attempts().size(), 1u);
  EXPECT_EQ(book.Attempts()[0].processes, 4);
  EXPECT_DOUBLE_EQ(book.Attempts()[0].started_seconds, 2.0);
  EXPECT_DOUBLE_EQ(book.Attempts()[0].ended_seconds, 4.0);
  EXPECT_TRUE(book.Attempts()[0].counted);
}

TEST(RendezvousAttempts, AFailureRestartsOnTheSameNodesWithAFreshPortAndNamesTheFirstFailure) {
  RendezvousOptions options = Options(2, 2);
  options.ledger.max_restarts = 3;
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)Report(book, b, 0, 1, Raised(3, "b", "ValueError: boom"), 42002,
               seconds(3));
  const auto rosters =
      OfKind(Report(book, a, 0, 1, {}, 42001, seconds(4)),
             NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  EXPECT_EQ(rosters[0].reply.attempt, 1);
  EXPECT_EQ(rosters[0].reply.coordinator_port, 42001);  // node 0's new offer
  EXPECT_EQ(rosters[0].reply.first_failure, "process 3 (node b, host box-b): ValueError: boom");
  EXPECT_EQ(book.attempt(), 1);
}

TEST(RendezvousAttempts, TheSameFailureTwiceInARowEndsWithOne) {
  RendezvousOptions options = Options(2, 2);
  options.ledger.max_restarts = 5;
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  const JobFailure boom = Raised(3, "b", "ValueError: boom at step 4", 7);
  (void)Report(book, b, 0, 7, boom, 42002, seconds(3));
  (void)Report(book, a, 0, 1, {}, 42001, seconds(4));
  (void)Report(book, b, 1, 7, boom, 43002, seconds(5));
  const auto ends = OfKind(Report(book, a, 1, 1, {}, 43001, seconds(6)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 1);
  EXPECT_NE(ends[0].reply.message.find("at the same point"), std::string::npos);
  EXPECT_EQ(ends[0].reply.first_failure, boom.Text());
}

TEST(RendezvousAttempts, ANamedFailureWinsOverAnEarlierConsequence) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)Report(book, a, 0, 1, {}, 42001, seconds(3));  // a's processes were ended by b's failure
  const auto ends = OfKind(Report(book, b, 0, 7, Raised(1, "b", "ValueError", 7), 42002,
                                  seconds(4)),
                           NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.first_failure, "process 1 (node b, host box-b): ValueError");
  EXPECT_EQ(ends[0].reply.exit_status, 7);
}

TEST(RendezvousAttempts, NoRestartLeftEndsWithTheFirstFailuresStatus) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)Report(book, b, 0, 3, Raised(2, "b", "KeyError", 3), 42002, seconds(3));
  const auto ends = OfKind(Report(book, a, 0, 1, {}, 42001, seconds(4)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 3);
  EXPECT_NE(book.AttemptTable().find("failed (exit 3): process 2 (node b, host box-b): KeyError"),
            std::string::npos)
      << book.AttemptTable();
}

TEST(RendezvousAttempts, AReplayedOrForgedReportIsRefusedAndChangesNothing) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  Agent forged = a;
  forged.token = "guess";
  const auto refused = Report(book, forged, 0, 0, {}, 42001, seconds(3));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].reply.kind, NodeReplyKind::kRefused);
  a.sequence = 0;  // a sequence number already used: a replay
  const auto replay = Report(book, a, 0, 0, {}, 42001, seconds(3));
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_NE(replay[0].reply.message.find("a replay"), std::string::npos);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kRunning);
}

TEST(RendezvousAttempts, AReportAboutAnotherAttemptIsRefused) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  (void)Join(book, a, seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2));
  const auto out = Report(book, a, 4, 0, {}, 42001, seconds(3));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("the job's attempt is 0"), std::string::npos);
}

}  // namespace
}  // namespace kdist
